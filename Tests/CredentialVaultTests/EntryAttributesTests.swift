import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

/// Entry attributes (issue 37, point 3): name → value pairs sealed in the index with the rest of
/// an entry's metadata (flag bit 3), never in the clear; an entry without them is written exactly
/// as before, so every golden file re-encodes to its own bytes.
@Suite(.blockingWork) struct EntryAttributesTests {
    static let gitAttributes = ["xdg:schema": "org.git.Password", "user": "alice", "server": "git.example.com",
                                "empty": "", "é-name": "välue ✓"]

    // MARK: - Round trips

    @Test func attributesSurviveAWriteAndAFreshOpen() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let directory = temp.child("v")
        let store = try SecretStore.create(in: directory, key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        let stored = try store.put(NewEntry(name: "git", secret: secret("pw"), kind: .password, label: "Git",
                                            attributes: Self.gitAttributes))
        try store.put(NewEntry(name: "plain", secret: secret("x")))
        #expect(stored.attributes == Self.gitAttributes)

        let reopened = try SecretStore.open(in: directory, key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        #expect(try reopened.metadata(named: "git").attributes == Self.gitAttributes)
        #expect(try reopened.metadata(named: "plain").attributes.isEmpty)
        #expect(try reopened.entry(named: "git").metadata.attributes == Self.gitAttributes)
        #expect(try reopened.list().first { $0.name == "git" }?.attributes == Self.gitAttributes)
        #expect(try reopened.verify().isIntact)
    }

    @Test func replacingAnEntryReplacesItsAttributesAndMovingKeepsThem() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "git", owner: "guest:g", secret: secret("pw"), attributes: ["a": "1", "b": "2"]))
        try store.put(NewEntry(name: "git", owner: "guest:g", secret: secret("pw2"), attributes: ["c": "3"]), replace: true)
        #expect(try store.metadata(named: "git", owner: "guest:g").attributes == ["c": "3"])
        try store.update { try $0.move(named: "git", from: "guest:g", to: "user:u") }
        #expect(try store.metadata(named: "git", owner: "user:u").attributes == ["c": "3"])
        let copy = NewEntry(copying: try store.entry(named: "git", owner: "user:u"))
        #expect(copy.attributes == ["c": "3"])
    }

    @Test func theIndependentPythonReaderReadsTheAttributes() throws {
        guard GoldenVaultTests.pythonCryptographyAvailable() else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("python3 with 'cryptography' is required in CI") }
            return
        }
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "git", secret: secret("pw"), attributes: Self.gitAttributes))
        try store.put(NewEntry(name: "plain", secret: secret("x")))
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/decrypt-vault.py").path
        let keyPath = try Fixtures.privateCopy("keys/alice.key", into: temp)
        // The same contents without the history section (header flag bit 0), which the script does not read.
        let key = VaultKey.keyMaterial(SecureBytes(copying: Array(try Fixtures.data("keys/alice.key"))))
        var (image, keys, kek) = try VaultFileCodec.decode(Array(try Data(contentsOf: URL(fileURLWithPath: store.vaultPath))), path: nil,
                                                           kekProvider: { try FuzzContext.deriveKEK(key: key, slot: $0) },
                                                           dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
        image.history = nil
        let withoutHistory = temp.child("without-history.vault")
        try Data(try VaultFileCodec.encode(image, keys: keys, kek: kek)).write(to: URL(fileURLWithPath: withoutHistory))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, withoutHistory, "--key-file", keyPath]
        let outputPipe = Pipe(), errorPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        try process.run()
        let output = outputPipe.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: errorPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the reader failed: \(errors)")
        struct Dump: Decodable {
            struct Entry: Decodable { let name: String, attributes: [String: String] }
            let entries: [Entry]
        }
        let dump = try JSONDecoder().decode(Dump.self, from: output)
        #expect(dump.entries.first { $0.name == "git" }?.attributes == Self.gitAttributes)
        #expect(dump.entries.first { $0.name == "plain" }?.attributes == [:])
    }

    // MARK: - The agent's protocol

    @Test func anAddRequestCarriesTheAttributesAndOnlyWhenThereAreSome() throws {
        let request = AgentRequest.add(directory: "/v", entries: [
            NewEntry(name: "git", secret: secret("pw"), attributes: Self.gitAttributes),
            NewEntry(name: "plain", secret: secret("x")),
        ], replace: false)
        let message = request.message()
        let described = try #require(message.header["entries"]?.arrayValue)
        #expect(described[0]["attributes"] == .object(Self.gitAttributes.mapValues(JSONValue.string)))
        #expect(described[1]["attributes"] == nil, "an entry without attributes is described as before")
        let decoded = try AgentRequest.decode(AgentMessage(message.header, secrets: message.secrets))
        guard case let .add(_, entries, _) = decoded.request else {
            Issue.record("not an add: \(decoded.request)")
            return
        }
        #expect(entries.map(\.attributes) == [Self.gitAttributes, [:]])
    }

    @Test func metadataAnswersCarryTheAttributes() throws {
        let created = Date(timeIntervalSince1970: 1_800_000_000)
        let metadata = EntryMetadata(name: "git", owner: "", kind: .password, label: nil, createdAt: created, updatedAt: created,
                                     expiresAt: nil, transferable: true, secretByteCount: 2, attributes: Self.gitAttributes)
        let plain = EntryMetadata(name: "plain", owner: "", kind: .generic, label: nil, createdAt: created, updatedAt: created,
                                  expiresAt: nil, transferable: true, secretByteCount: 1)
        let response = AgentResponse.metadata([metadata, plain])
        #expect(response.message.header["entries"]?[1]?["attributes"] == nil)
        let decoded = try AgentResponse.decode(response.message, answering: .list(directory: "/v", owner: nil), socketPath: "/s")
        guard case let .metadata(got) = decoded else {
            Issue.record("not metadata: \(decoded)")
            return
        }
        #expect(got == [metadata, plain])
    }

    @Test(arguments: [JSONValue.string("user=alice"), .array([.string("a")]), .object(["user": .integer(1)]), .object(["user": .null])])
    func malformedAttributesInARequestOrAnAnswerAreRefused(attributes: JSONValue) throws {
        let entry: JSONValue = ["name": "git", "owner": "", "kind": "password", "label": nil, "expiresAtSeconds": nil,
                                "transferable": true, "attributes": attributes]
        let request = AgentMessage(["op": "add", "directory": "/v", "replace": false, "secrets": 1, "entries": [entry]],
                                   secrets: [secret("pw")])
        expectVaultError(.invalidInput) { try AgentRequest.decode(request) }
        let answer = AgentMessage(["ok": true, "entries": [[
            "name": "git", "owner": "", "kind": "password", "label": nil, "createdAtSeconds": .number(1), "updatedAtSeconds": .number(1),
            "expiresAtSeconds": nil, "transferable": true, "secretBytes": .integer(2), "attributes": attributes,
        ]]])
        expectVaultError(.agentUnavailable) { try AgentResponse.decode(answer, answering: .list(directory: "/v", owner: nil), socketPath: "/s") }
    }

    // MARK: - Compatibility and secrecy

    /// Every key-file golden file's index, decoded and encoded again by this build, is the very
    /// plaintext that was sealed in it: entries without attributes kept their encoding.
    @Test(arguments: ["v1-keyfile.vault", "v1-empty.vault", "v2-keyfile.vault", "v2-empty.vault", "v3-keyfile.vault", "v3-empty.vault"])
    func aGoldenIndexReEncodesToItsOwnBytes(file: String) throws {
        let bytes = Array(try Fixtures.data("golden/\(file)"))
        let key = VaultKey.keyMaterial(SecureBytes(copying: Array(try Fixtures.data("keys/\(file.contains("empty") ? "bob" : "alice").key"))))
        let (image, keys, _) = try VaultFileCodec.decode(bytes, path: nil, kekProvider: { try FuzzContext.deriveKEK(key: key, slot: $0) },
                                                         dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
        #expect(image.entries.allSatisfy { $0.attributes.isEmpty })
        let header = try VaultFileHeader.parse(bytes, path: nil)
        let start = header.layout.headerByteCount
        let plain = try AES256GCM.open(try AES256GCM.SealedBox(combined: bytes[start..<header.valuesStart]),
                                       using: keys.index(header.layout), authenticating: Array(bytes[0..<start]))
            .withUnsafeBytes { Array($0) }
        if header.layout.majorVersion == 1 {
            let encoded = IndexCodec.encode(image.entries, vaultID: image.vaultID, generation: image.generation)
            #expect(plain.count >= encoded.count)
            #expect(Array(plain.prefix(encoded.count)) == encoded)
            #expect(plain.dropFirst(encoded.count).allSatisfy { $0 == 0 })
        } else {
            var encoded = IndexCodec.encodeV2(image.entries, vaultID: image.vaultID, generation: image.generation,
                                              stateKey: try #require(image.stateKey))
            encoded += [UInt8](repeating: 0, count: IndexCodec.paddedV2Length(unpadded: encoded.count) - encoded.count)
            #expect(encoded == plain)
        }
    }

    @Test func theSealedFileHoldsNoAttributeText() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        let name = "xdg:schema-MARKER-NAME", value = "org.git.Password-MARKER-VALUE"
        try store.put(NewEntry(name: "git", secret: secret("pw"), label: "LABEL-MARKER", attributes: [name: value]))
        let file = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        for text in [name, value, "MARKER", "LABEL-MARKER"] {
            let needle = Array(text.utf8)
            let found = (0...(file.count - needle.count)).contains { file[$0..<($0 + needle.count)].elementsEqual(needle) }
            #expect(!found, "'\(text)' is in the sealed file")
        }
        #expect(try store.metadata(named: "git").attributes == [name: value])
    }

    /// Header flag bit 1 says "some entry has attributes", so that a release before them refuses the
    /// file as an unsupported version (it knows no such bit) before asking for the key.
    @Test func theHeaderFlagFollowsWhetherAnyEntryHasAttributes() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        func headerFlags() throws -> UInt16 {
            try VaultFileHeader.parse(Array(try Data(contentsOf: URL(fileURLWithPath: store.vaultPath))), path: nil).flags
        }
        try store.put(NewEntry(name: "plain", secret: secret("x")))
        #expect(try headerFlags() & VaultFileLayout.headerFlagAttributes == 0)
        try store.put(NewEntry(name: "git", secret: secret("pw"), attributes: ["user": "alice"]))
        #expect(try headerFlags() & VaultFileLayout.headerFlagAttributes != 0)
        try store.put(NewEntry(name: "git", secret: secret("pw")), replace: true)
        #expect(try headerFlags() & VaultFileLayout.headerFlagAttributes == 0, "gone with the last attribute")
        try store.put(NewEntry(name: "git", secret: secret("pw"), attributes: ["user": "alice"]), replace: true)
        try store.remove(named: "git")
        #expect(try headerFlags() & VaultFileLayout.headerFlagAttributes == 0)
    }

    /// A version 2 file stays readable by releases before attributes, so it does not take them.
    @Test func aVersion2VaultRefusesAttributesUntilUpgraded() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try FormatV2Tests.store(version: 2, name: "v2", in: temp)
        let error = expectVaultError(.invalidInput) {
            try store.put(NewEntry(name: "git", secret: secret("pw"), attributes: ["user": "alice"]))
        }
        #expect(error?.topic == .attributesNeedNewerFormat)
        #expect(error?.message.contains("format version 2") == true)
        #expect(try store.list().isEmpty, "nothing written")
        try store.put(NewEntry(name: "plain", secret: secret("pw")))
        #expect(try store.upgradeFormat().version == 3)
        try store.put(NewEntry(name: "git", secret: secret("pw"), attributes: ["user": "alice"]))
        #expect(try store.metadata(named: "git").attributes == ["user": "alice"])
    }

    // MARK: - Limits

    @Test func attributesAtTheLimitsAreAccepted() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        var many: [String: String] = [:]
        for number in 0..<VaultLimits.maximumAttributes { many["name-\(number)"] = "\(number)" }
        let longest = [String(repeating: "n", count: 256): String(repeating: "v", count: 1024), "e": ""]
        try store.put(NewEntry(name: "many", secret: secret("x"), attributes: many))
        try store.put(NewEntry(name: "longest", secret: secret("x"), attributes: longest))
        let reopened = try SecretStore.open(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        #expect(try reopened.metadata(named: "many").attributes == many)
        #expect(try reopened.metadata(named: "longest").attributes == longest)
    }

    @Test(arguments: [
        ("65 attributes", Dictionary(uniqueKeysWithValues: (0...64).map { ("n\($0)", "v") }), "65 attributes"),
        ("empty name", ["": "v"], "name is empty"),
        ("257-byte name", [String(repeating: "n", count: 257): "v"], "257 bytes"),
        ("1025-byte value", ["n": String(repeating: "v", count: 1025)], "1025 bytes"),
        ("NUL in name", ["n\u{0}x": "v"], "NUL"),
        ("NUL in value", ["n": "v\u{0}x"], "NUL"),
    ] as [(String, [String: String], String)])
    func attributesOverTheLimitsAreRefused(what: String, attributes: [String: String], message: String) throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        let error = expectVaultError(.invalidInput) { try store.put(NewEntry(name: "e", secret: secret("x"), attributes: attributes)) }
        #expect(error?.message.contains(message) == true, "\(what): \(error?.message ?? "-")")
        #expect(try store.list().isEmpty, "\(what): nothing written")
    }

    // MARK: - Crafted indexes

    /// A one-entry v3 index plaintext whose entry "a" has `attributes`, and the offset of its attribute count.
    static func craftedIndex(attributes: [String: String]) throws -> (plain: [UInt8], countOffset: Int, vaultID: [UInt8]) {
        let vaultID = [UInt8](repeating: 9, count: VaultFileLayout.vaultIDByteCount)
        let entry = SealedEntry(name: "a", owner: "", kind: .generic, label: nil, createdMilliseconds: 1, updatedMilliseconds: 2,
                                expiresMilliseconds: nil, transferable: true, nonce: [UInt8](repeating: 1, count: 12),
                                ciphertext: [], tag: [UInt8](repeating: 2, count: 16), attributes: attributes)
        var plain = IndexCodec.encodeV2([entry], vaultID: vaultID, generation: 1, stateKey: [UInt8](repeating: 3, count: 32))
        plain += [UInt8](repeating: 0, count: IndexCodec.paddedV2Length(unpadded: plain.count) - plain.count)
        // vault id, generation, count, values length, state key; owner, name "a", kind, flags, created, updated.
        let countOffset = 16 + 8 + 4 + 8 + 32 + 2 + 2 + 1 + 1 + 1 + 8 + 8
        return (plain, countOffset, vaultID)
    }

    static func decode(_ plain: [UInt8], vaultID: [UInt8]) throws -> IndexContents {
        try IndexCodec.decodeV2(plain, vaultID: vaultID, valuesRegion: [UInt8](repeating: 0, count: 992)[...],
                                regionOverhead: VaultFileLayout.valuesLayerOverhead, path: nil)
    }

    @Test func aCraftedIndexDecodesItsAttributes() throws {
        let crafted = try Self.craftedIndex(attributes: ["b": "2", "a": "1"])
        #expect(crafted.plain[crafted.countOffset - 17] & VaultFileLayout.flagHasAttributes != 0, "flag bit 3")
        #expect(crafted.plain[crafted.countOffset] == 2)
        // Sorted by name bytes: "a" first.
        #expect(Array(crafted.plain[(crafted.countOffset + 1)..<(crafted.countOffset + 4)]) == [0, 1, UInt8(ascii: "a")])
        #expect(try Self.decode(crafted.plain, vaultID: crafted.vaultID).entries.first?.attributes == ["a": "1", "b": "2"])
    }

    @Test(arguments: [0, 65, 255] as [UInt8])
    func anAttributeCountOutOfRangeIsTampered(count: UInt8) throws {
        var crafted = try Self.craftedIndex(attributes: ["a": "1"])
        crafted.plain[crafted.countOffset] = count
        let error = expectVaultError(.tampered) { try Self.decode(crafted.plain, vaultID: crafted.vaultID) }
        #expect(error?.message.contains("attribute") == true)
    }

    @Test func anAttributeCountPastTheEntriesIsRefusedWithoutACrash() throws {
        // Claims 3 pairs but holds 1: the rest of the entry is read as pairs, and fails a check.
        var crafted = try Self.craftedIndex(attributes: ["a": "1"])
        crafted.plain[crafted.countOffset] = 3
        do {
            _ = try Self.decode(crafted.plain, vaultID: crafted.vaultID)
            Issue.record("an over-long attribute count was accepted")
        } catch let error as VaultError {
            #expect([.tampered, .corrupt].contains(error.code))
        }
    }

    @Test func anIndexEndingInsideTheAttributesIsCorrupt() throws {
        let crafted = try Self.craftedIndex(attributes: ["name": "value"])
        for cut in (crafted.countOffset + 1)..<(crafted.countOffset + 12) {
            expectVaultError(.corrupt) { try Self.decode(Array(crafted.plain.prefix(cut)), vaultID: crafted.vaultID) }
        }
    }

    @Test func attributesOutOfOrderDuplicatedOrWithNULAreTampered() throws {
        let crafted = try Self.craftedIndex(attributes: ["a": "1", "b": "2"])
        let first = crafted.countOffset + 1   // u16 length, "a", u16 length, "1", u16 length, "b", ...
        var swapped = crafted.plain
        swapped[first + 2] = UInt8(ascii: "b")
        swapped[first + 8] = UInt8(ascii: "a")
        expectVaultError(.tampered) { try Self.decode(swapped, vaultID: crafted.vaultID) }
        var duplicated = crafted.plain
        duplicated[first + 8] = UInt8(ascii: "a")
        expectVaultError(.tampered) { try Self.decode(duplicated, vaultID: crafted.vaultID) }
        var withNUL = crafted.plain
        withNUL[first + 5] = 0
        expectVaultError(.tampered) { try Self.decode(withNUL, vaultID: crafted.vaultID) }
        var badUTF8 = crafted.plain
        badUTF8[first + 5] = 0xFF
        expectVaultError(.tampered) { try Self.decode(badUTF8, vaultID: crafted.vaultID) }
    }
}
