#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import CredentialVault

@Suite("ProfileStore")
struct ProfileStoreTests {
    /// Runs `body` with a fresh 0700 directory that is removed afterwards.
    private func withDirectory(_ body: (String) async throws -> Void) async throws {
        let path = NSTemporaryDirectory() + "profile-store-test-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await body(path)
    }

    /// Writes `bytes` to `path` with `mode`, the way a hand edit or a crash might leave it.
    private func plant(_ bytes: [UInt8], at path: String, mode: Int = 0o600) throws {
        let created = FileManager.default.createFile(atPath: path, contents: Data(bytes),
                                                     attributes: [.posixPermissions: mode])
        try #require(created, "could not create \(path)")
    }

    private func contents(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map(Array.init)
    }

    private func mode(_ path: String) -> mode_t {
        var status = stat()
        guard stat(path, &status) == 0 else { return 0 }
        return status.st_mode & 0o777
    }

    private static let startedAt = Date(timeIntervalSince1970: 1_767_225_600.123)

    private static let sampleProfile = Profile(
        anonymousID: "anon-6F1C2B",
        user: User(id: "user-1234", displayName: "Alice Example", email: "alice@example.com",
                   signInMethod: "password", onboardingComplete: true),
        settings: ["theme": "dark", "launchCount": 3, "ratio": 0.75, "flags": [true, false],
                   "nested": ["nothing": nil, "since": 1_700_000_000]],
        pendingSignIn: PendingSignIn(journalID: "journal-01", userID: "user-1234", anonymousID: "anon-6F1C2B",
                                     user: User(id: "user-1234"), startedAt: startedAt),
        extra: ["futureFeature": ["enabled": true]]
    )

    // MARK: Round trips

    @Test func loadReturnsNilWhenNothingIsStored() async throws {
        try await withDirectory { directory throws in
            #expect(try ProfileStore(directory: directory).load() == nil)
            #expect(try ProfileStore(directory: directory + "/not-created-yet").load() == nil)
        }
    }

    @Test func saveThenLoadRoundTrips() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory + "/state")
            try store.save(Self.sampleProfile)
            let loaded = try #require(try store.load())
            #expect(loaded == Self.sampleProfile)
            #expect(loaded.pendingSignIn?.startedAt == Self.startedAt)
            #expect(loaded.settings["nested"]?["since"]?.intValue == 1_700_000_000)
            #expect(try ProfileStore(directory: directory + "/state").load() == Self.sampleProfile)
        }
    }

    @Test func savedFileIsSortedPrettyJSONWithATrailingNewline() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try store.save(Profile(anonymousID: "anon-1", settings: ["b": 1, "a": 1_700_000_000]))
            let text = String(decoding: try #require(contents(store.path)), as: UTF8.self)
            #expect(text == """
                {
                  "anonymousId": "anon-1",
                  "schemaVersion": 1,
                  "settings": {
                    "a": 1700000000,
                    "b": 1
                  }
                }

                """)
        }
    }

    @Test func pendingSignInIsWrittenWithISO8601Dates() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try store.save(Self.sampleProfile)
            let document = try JSONValue(parsing: try #require(contents(store.path)))
            #expect(document["pendingSignIn"]?["startedAt"] == "2026-01-01T00:00:00.123Z")
            #expect(document["pendingSignIn"]?["journalId"] == "journal-01")
            #expect(document["user"]?["onboardingComplete"] == true)
            #expect(document["futureFeature"] == ["enabled": true])
        }
    }

    @Test func codableModelsUseTheSameJSONShape() throws {
        let pending = try #require(Self.sampleProfile.pendingSignIn)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970  // must not matter
        let encoded = try encoder.encode(pending)
        let document = try JSONValue(parsing: encoded)
        #expect(document["startedAt"] == "2026-01-01T00:00:00.123Z")
        #expect(try JSONDecoder().decode(PendingSignIn.self, from: encoded) == pending)

        let user = try JSONDecoder().decode(User.self, from: Data(#"{"id":"u1","email":"e@example.com"}"#.utf8))
        #expect(user == User(id: "u1", email: "e@example.com", onboardingComplete: false))
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(User.self, from: Data(#"{"displayName":"no id"}"#.utf8))
        }
    }

    // MARK: Unknown keys

    @Test func unknownKeysSurviveARewrite() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try plant(Array("""
                {
                  "schemaVersion": 1,
                  "anonymousId": "anon-1",
                  "addedInANewerRelease": {"list": [1, 2.5, "three", null], "flag": false},
                  "topLevelNumber": 1700000000,
                  "user": {"id": "user-1", "avatarURL": "https://example.com/a.png", "tier": 3},
                  "settings": {"theme": "light"}
                }
                """.utf8), at: store.path)
            try store.update { $0.settings["theme"] = "dark" }

            let document = try JSONValue(parsing: try #require(contents(store.path)))
            #expect(document["addedInANewerRelease"] == ["list": [1, 2.5, "three", nil], "flag": false])
            #expect(document["topLevelNumber"] == 1_700_000_000)
            #expect(document["user"]?["avatarURL"] == "https://example.com/a.png")
            #expect(document["user"]?["tier"] == 3)
            #expect(document["settings"]?["theme"] == "dark")
            let text = String(decoding: try #require(contents(store.path)), as: UTF8.self)
            #expect(text.contains("1700000000"))

            let loaded = try #require(try store.load())
            #expect(loaded.extra.keys.sorted() == ["addedInANewerRelease", "topLevelNumber"])
        }
    }

    @Test func unknownUserKeysAreDroppedWhenAnotherUserTakesOver() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try plant(Array(#"{"schemaVersion":1,"user":{"id":"user-1","avatarURL":"a.png"}}"#.utf8), at: store.path)
            try store.update { $0.user = User(id: "user-2") }
            let document = try JSONValue(parsing: try #require(contents(store.path)))
            #expect(document["user"] == ["id": "user-2", "onboardingComplete": false])
        }
    }

    @Test func knownKeysInExtraAreIgnored() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try store.save(Profile(extra: ["user": ["id": "sneaky"], "schemaVersion": 99, "other": 1]))
            let loaded = try #require(try store.load())
            #expect(loaded.user == nil)
            #expect(loaded.schemaVersion == 1)
            #expect(loaded.extra == ["other": 1])
        }
    }

    // MARK: Damaged files

    @Test(arguments: [
        ("truncated JSON", Array(#"{"schemaVersion": 1, "settings": {"theme": "da"#.utf8), "not valid JSON"),
        ("empty file", [], "not valid JSON"),
        ("binary garbage", [0x00, 0xFF, 0x13, 0x37, 0xC3, 0x28, 0x8B, 0x1F], "not valid JSON"),
        ("trailing comma", Array(#"{"schemaVersion": 1,}"#.utf8), "not valid JSON"),
        ("duplicate key", Array(#"{"schemaVersion": 1, "schemaVersion": 1}"#.utf8), "not valid JSON"),
        ("an array", Array("[1, 2, 3]".utf8), "is an array, not a JSON object"),
        ("null", Array("null".utf8), "is null, not a JSON object"),
        ("no schemaVersion", Array(#"{"settings": {}}"#.utf8), "schemaVersion is missing"),
        ("string schemaVersion", Array(#"{"schemaVersion": "1"}"#.utf8), "schemaVersion must be a whole number"),
        ("zero schemaVersion", Array(#"{"schemaVersion": 0}"#.utf8), "schemaVersion must be a whole number"),
        ("numeric user id", Array(#"{"schemaVersion": 1, "user": {"id": 5}}"#.utf8), "user.id must be a string"),
        ("settings not an object", Array(#"{"schemaVersion": 1, "settings": []}"#.utf8), "settings must be an object"),
        ("bad startedAt", Array(#"{"schemaVersion": 1, "pendingSignIn": {"journalId": "j", "userId": "u", "anonymousId": "a", "user": {"id": "u"}, "startedAt": 1767225600}}"#.utf8),
         "pendingSignIn.startedAt must be a string"),
    ] as [(String, [UInt8], String)])
    func damagedFilesAreErrorsAndStayUntouched(label: String, bytes: [UInt8], words: String) async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try plant(bytes, at: store.path)

            let loadError = try #require(throws: VaultError.self, "\(label)") { try store.load() }
            #expect(loadError.code == .corrupt, "\(label)")
            #expect(loadError.message.hasPrefix("the profile "), "\(label)")
            #expect(loadError.message.contains(words), "\(label): \(loadError.message)")
            #expect(loadError.path == store.path)

            var bodyRan = false
            let updateError = try #require(throws: VaultError.self, "\(label)") {
                try store.update { profile in
                    bodyRan = true
                    profile.anonymousID = "would-replace-the-damaged-file"
                }
            }
            #expect(updateError.code == .corrupt)
            #expect(!bodyRan)
            #expect(contents(store.path) == bytes, "\(label): the file must be left as it was")
        }
    }

    @Test func syntaxErrorsSayWhere() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try plant(Array("{\n  \"schemaVersion\": 1,\n  \"settings\": {\"a\": tru}\n}\n".utf8), at: store.path)
            let error = try #require(throws: VaultError.self) { try store.load() }
            #expect(error.message.contains("line 3"))
        }
    }

    @Test func newerSchemaVersionIsUnsupportedNotCorrupt() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            // Version 2 may have reshaped anything; the version decides before the shape.
            let bytes = Array(#"{"schemaVersion": 2, "user": "now a string", "settings": {"theme": "dark"}}"#.utf8)
            try plant(bytes, at: store.path)
            let error = try #require(throws: VaultError.self) { try store.load() }
            #expect(error.code == .unsupportedVersion)
            #expect(error.message.contains("schema version 2"))
            #expect(throws: VaultError.self) { try store.update { $0.settings["theme"] = "light" } }
            #expect(contents(store.path) == bytes)
        }
    }

    @Test func oversizedFileIsRefusedAsCorrupt() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try plant([UInt8](repeating: 0x20, count: ProfileStore.maximumFileSize + 1), at: store.path)
            let error = try #require(throws: VaultError.self) { try store.load() }
            #expect(error.code == .corrupt)
        }
    }

    @Test func fileReadableByOthersIsRefusedNotEmpty() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try plant(Array(#"{"schemaVersion": 1}"#.utf8), at: store.path, mode: 0o644)
            let error = try #require(throws: VaultError.self) { try store.load() }
            #expect(error.code == .insecurePermissions)
        }
    }

    // MARK: Writing

    @Test func filesAreOwnerOnly() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory + "/new/state")
            try store.save(Profile(anonymousID: "anon-1"))
            #expect(mode(store.path) == 0o600)
            #expect(mode(store.directory) == 0o700)
            try store.update { $0.settings["x"] = 1 }
            #expect(mode(store.path) == 0o600)
            #expect(mode(store.lockPath) == 0o600)
            #expect(store.lockPath == directory + "/new/state/profile.lock")
        }
    }

    @Test func updateStartsFromAnEmptyProfileAndSkipsNoOpWrites() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            let answer = try store.update { profile in
                #expect(profile == Profile())
                return 42
            }
            #expect(answer == 42)
            #expect(!FileManager.default.fileExists(atPath: store.path))

            try store.update { $0.anonymousID = "anon-1" }
            #expect(try store.load()?.anonymousID == "anon-1")
        }
    }

    @Test func updateThatThrowsWritesNothing() async throws {
        struct Abort: Error {}
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try store.save(Self.sampleProfile)
            let before = contents(store.path)
            #expect(throws: Abort.self) {
                try store.update { profile in
                    profile.anonymousID = "changed"
                    throw Abort()
                }
            }
            #expect(contents(store.path) == before)
        }
    }

    @Test func saveRefusesSchemaVersionsItCannotWrite() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            for version in [0, Profile.currentSchemaVersion + 1] {
                let error = try #require(throws: VaultError.self) { try store.save(Profile(schemaVersion: version)) }
                #expect(error.code == .invalidInput)
            }
            #expect(!FileManager.default.fileExists(atPath: store.path))
        }
    }

    @Test func removeDeletesTheProfileAndIsIdempotent() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory)
            try store.save(Self.sampleProfile)
            try store.remove()
            #expect(try store.load() == nil)
            try store.remove()
            try ProfileStore(directory: directory + "/missing").remove()
        }
    }

    @Test func invalidFileNamesAreRejected() async throws {
        try await withDirectory { directory in
            for name in ["", ".", "..", "a/b"] {
                let store = ProfileStore(directory: directory, fileName: name)
                let error = try #require(throws: VaultError.self) { try store.load() }
                #expect(error.code == .invalidInput)
            }
        }
    }

    // MARK: Concurrency

    @Test func concurrentUpdatesAllLand() async throws {
        let writers = 40
        try await withDirectory { directory in
            // Two store objects on one file: the flock excludes them like two processes.
            let stores = [ProfileStore(directory: directory), ProfileStore(directory: directory)]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<writers {
                    let store = stores[index % stores.count]
                    group.addTask {
                        try store.update { profile in
                            let count = profile.settings["counter"]?.intValue ?? 0
                            profile.settings["counter"] = .number(Double(count + 1))
                            profile.settings["writer-\(index)"] = true
                        }
                    }
                }
                try await group.waitForAll()
            }
            let profile = try #require(try stores[0].load())
            #expect(profile.settings["counter"]?.intValue == writers)
            #expect(profile.settings.count == writers + 1)
        }
    }

    @Test func heldLockMakesWritersBusy() async throws {
        try await withDirectory { directory in
            let store = ProfileStore(directory: directory, lockTimeout: .milliseconds(50))
            let holder = try FileLock.acquire(path: store.lockPath, mode: .exclusive, timeout: .zero)
            defer { holder.release() }
            let error = try #require(throws: VaultError.self) { try store.update { $0.anonymousID = "x" } }
            #expect(error.code == .busy)
            #expect(!FileManager.default.fileExists(atPath: store.path))
        }
    }
}
