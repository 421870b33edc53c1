import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

@Suite struct SecretStoreTests {
    @Test func putGetListRemoveRoundTrip() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let store = try SecretStore.create(in: temp.child("vault"), key: key, options: .testing())
        #expect(try store.list().isEmpty)

        let expiry = Date(timeIntervalSince1970: 1_800_003_600)
        try store.put(NewEntry(name: "github", secret: secret("gho_abc"), kind: .accessToken, label: "GitHub", expiresAt: expiry))
        try store.put(NewEntry(name: "refresh", secret: secret("r1"), kind: .refreshToken))

        let reopened = try SecretStore.open(in: temp.child("vault"), key: key, options: .testing())
        #expect(try reopened.secret(named: "github") == secret("gho_abc"))
        let metadata = try reopened.metadata(named: "github")
        #expect(metadata.kind == .accessToken)
        #expect(metadata.label == "GitHub")
        #expect(metadata.expiresAt == expiry)
        #expect(metadata.secretByteCount == 7)
        #expect(try reopened.list().map(\.name) == ["github", "refresh"])

        try reopened.remove(named: "github")
        expectVaultError(.notFound) { try store.secret(named: "github") }
        expectVaultError(.notFound) { try store.remove(named: "github") }
        #expect(try store.list().map(\.name) == ["refresh"])
    }

    @Test func putRefusesExistingNameUnlessReplacing() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        var now = Date(timeIntervalSince1970: 1_800_000_000)
        let store = try SecretStore.create(in: temp.path + "/v", key: try Fixtures.keyFile("alice.key", in: temp), options: .testing(now: now))
        try store.put(NewEntry(name: "api", secret: secret("one")))
        let error = expectVaultError(.alreadyExists) { try store.put(NewEntry(name: "api", secret: secret("two"))) }
        // The library names no command-line flag; the CLI adds "--replace" (CommandHintTests).
        #expect(error?.fix?.contains("replace it") == true)
        #expect(error?.description.contains("--") == false)
        #expect(error?.topic == .entryExists)
        #expect(try store.secret(named: "api") == secret("one"))

        now = now.addingTimeInterval(60)
        let later = try SecretStore.open(in: temp.path + "/v", key: try Fixtures.keyFile("alice.key", in: temp), options: .testing(now: now))
        try later.put(NewEntry(name: "api", secret: secret("two")), replace: true)
        let metadata = try later.metadata(named: "api")
        #expect(try later.secret(named: "api") == secret("two"))
        #expect(metadata.createdAt == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(metadata.updatedAt == Date(timeIntervalSince1970: 1_800_000_060))
    }

    @Test func ownersAreSeparateNamespaces() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "cart", owner: "guest:1", secret: secret("g")))
        try store.put(NewEntry(name: "cart", owner: "user:9", secret: secret("u")))
        try store.put(NewEntry(name: "Cart", owner: "user:9", secret: secret("U")))
        #expect(try store.secret(named: "cart", owner: "guest:1") == secret("g"))
        #expect(try store.secret(named: "cart", owner: "user:9") == secret("u"))
        #expect(try store.secret(named: "Cart", owner: "user:9") == secret("U"))
        #expect(try store.list(owner: "user:9").map(\.name) == ["Cart", "cart"])
        expectVaultError(.notFound) { try store.secret(named: "cart") }
    }

    @Test func valuesRoundTripExactly() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        let binary = SecureBytes(copying: [0, 0xFF, 0, 0xC3, 0x28, 0x0A, 0])   // NULs and invalid UTF-8
        let mebibyte = SecureBytes(copying: (0..<VaultLimits.maximumSecretBytes).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try store.put(NewEntry(name: "binary", secret: binary))
        try store.put(NewEntry(name: "empty", secret: .empty))
        try store.put(NewEntry(name: "big", secret: mebibyte))
        try store.put(NewEntry(name: "名前 🔑", secret: secret("unicode name")))
        let reopened = try SecretStore.open(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        #expect(try reopened.secret(named: "binary") == binary)
        #expect(try reopened.secret(named: "empty") == .empty)
        #expect(try reopened.secret(named: "big") == mebibyte)
        #expect(try reopened.secret(named: "名前 🔑") == secret("unicode name"))
        #expect(try reopened.verify().entriesChecked == 4)
    }

    @Test func capsAreClearErrorsAndWriteNothing() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        let generation = store.generation
        let tooBig = SecureBytes(count: VaultLimits.maximumSecretBytes + 1) { _ in }
        let error = expectVaultError(.invalidInput) { try store.put(NewEntry(name: "big", secret: tooBig)) }
        #expect(error?.message.contains("1 MiB") == true)
        expectVaultError(.invalidInput) { try store.put(NewEntry(name: "", secret: secret("x"))) }
        expectVaultError(.invalidInput) { try store.put(NewEntry(name: String(repeating: "n", count: 257), secret: secret("x"))) }
        expectVaultError(.invalidInput) { try store.put(NewEntry(name: "line\nbreak", secret: secret("x"))) }
        expectVaultError(.invalidInput) { try store.put(NewEntry(name: "ok", secret: secret("x"), label: String(repeating: "l", count: 1025))) }
        #expect(try store.list().isEmpty)
        #expect(store.generation == generation)
    }

    @Test func emptyVaultOpensAndVerifies() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        _ = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        let store = try SecretStore.open(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        let report = try store.verify()
        #expect(report.entriesChecked == 0)
        #expect(report.isIntact)
        #expect(report.generation == 1)
    }

    @Test func fileIsPaddedAndRevealsNoNames() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "very-visible-name", owner: "owner-visible", secret: secret("very-visible-secret"), label: "visible-label"))
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.vaultPath))
        #expect(bytes.count % 1024 == 0)
        for needle in ["very-visible", "owner-visible", "visible-label"] {
            #expect(bytes.range(of: Data(needle.utf8)) == nil, "\(needle) appears in the file")
        }
    }

    @Test func updateAppliesSeveralChangesAsOneWrite() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "a", secret: secret("1")))
        let before = store.generation
        try store.update { transaction in
            try transaction.put(NewEntry(name: "b", secret: secret("2")))
            try transaction.remove(named: "a")
            try transaction.put(NewEntry(name: "c", secret: secret("3")))
        }
        #expect(store.generation == before + 1)
        #expect(try store.list().map(\.name) == ["b", "c"])

        struct Abort: Error {}
        #expect(throws: Abort.self) {
            try store.update { transaction in
                try transaction.put(NewEntry(name: "d", secret: secret("4")))
                throw Abort()
            }
        }
        #expect(try store.list().map(\.name) == ["b", "c"])
        #expect(store.generation == before + 1)
    }

    @Test func changeKeyRewrapsAndOldKeyStopsWorking() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let alice = try Fixtures.keyFile("alice.key", in: temp)
        let bob = try Fixtures.keyFile("bob.key", in: temp)
        let store = try SecretStore.create(in: temp.child("v"), key: alice, options: .testing())
        try store.put(NewEntry(name: "token", secret: secret("t")))
        try store.changeKey(to: bob)
        expectVaultError(.wrongKey) { try SecretStore.open(in: temp.child("v"), key: alice, options: .testing()) }
        #expect(try SecretStore.open(in: temp.child("v"), key: bob, options: .testing()).secret(named: "token") == secret("t"))

        try store.changeKey(to: try Fixtures.passphrase())
        let error = expectVaultError(.wrongKey) { try SecretStore.open(in: temp.child("v"), key: bob, options: .testing()) }
        #expect(error?.message.contains("passphrase") == true)
        #expect(try SecretStore.open(in: temp.child("v"), key: try Fixtures.passphrase(), options: .testing()).secret(named: "token") == secret("t"))
    }

    @Test func rotateReencryptsEveryValueUnderANewDataKey() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let store = try SecretStore.create(in: temp.child("v"), key: key, options: .testing())
        for index in 0..<5 { try store.put(NewEntry(name: "n\(index)", secret: secret("s\(index)"))) }
        let before = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        try store.rotate()
        let after = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        // The wrapped DEK differs, and so does every value's ciphertext.
        #expect(before[82..<114] != after[82..<114])
        let start = try VaultFileHeader.parse(after, path: nil).valuesStart
        #expect(try VaultFileHeader.parse(before, path: nil).valuesStart == start)
        #expect(before[start..<(start + 10)] != after[start..<(start + 10)])
        let reopened = try SecretStore.open(in: temp.child("v"), key: key, options: .testing())
        for index in 0..<5 { #expect(try reopened.secret(named: "n\(index)") == secret("s\(index)")) }
        #expect(try reopened.verify().isIntact)
    }

    @Test func wipeRemovesTheVaultButKeepsTheLockFile() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let store = try SecretStore.create(in: temp.child("v"), key: key, options: .testing())
        try store.put(NewEntry(name: "token", secret: secret("t")))
        try store.wipe()
        #expect(!FileManager.default.fileExists(atPath: store.vaultPath))
        // Deleting a lock file another process may wait on would split the lock in two.
        #expect(FileManager.default.fileExists(atPath: temp.child("v/secrets.lock")))
        #expect(!SecretStore.exists(in: temp.child("v")))
        expectVaultError(.notFound) { try SecretStore.open(in: temp.child("v"), key: key, options: .testing()) }
    }

    @Test func createRefusesAnExistingVault() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let store = try SecretStore.create(in: temp.child("v"), key: key, options: .testing())
        try store.put(NewEntry(name: "keep", secret: secret("me")))
        expectVaultError(.alreadyExists) { try SecretStore.create(in: temp.child("v"), key: key, options: .testing()) }
        #expect(try store.secret(named: "keep") == secret("me"))
    }

    @Test func openMissingVaultSaysNotFound() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let error = expectVaultError(.notFound) {
            try SecretStore.open(in: temp.child("nothing"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        }
        #expect(error?.fix?.contains("create a vault") == true)
        #expect(error?.fix?.contains("vault init") == false)
        #expect(error?.topic == .vaultNotFound)
    }

    @Test func descriptionsNeverShowSecrets() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "n", secret: secret("hunter2-topsecret")))
        let entry = try store.entry(named: "n")
        var dumped = ""
        dump(entry, to: &dumped)
        for text in ["\(entry)", String(reflecting: entry), dumped, "\(VaultKey.passphrase(secret("hunter2-topsecret")))"] {
            #expect(!text.contains("hunter2"))
        }
    }

    @Test func noncesAndSaltsNeverRepeat() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        var nonces = Set<[UInt8]>()
        var salts = Set<[UInt8]>()
        var layerSalts = Set<[UInt8]>()
        var saves = 0
        /// The v3 values layer's salt: the first 32 bytes of the values region.
        func layerSalt(_ file: [UInt8]) throws -> [UInt8] {
            let start = try VaultFileHeader.parse(file, path: nil).valuesStart
            return Array(file[start..<(start + VaultFileLayout.valuesLayerSaltByteCount)])
        }
        for index in 0..<1500 {
            try store.put(NewEntry(name: "n\(index % 10)", secret: secret("s\(index)")), replace: true)
            let file = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
            #expect(file[8] == 3)
            nonces.insert(Array(file[70..<82]))     // wrapped DEK nonce
            nonces.insert(Array(file[182..<194]))   // index nonce (v2, v3)
            layerSalts.insert(try layerSalt(file))
            saves += 1
        }
        for _ in 0..<100 {
            try store.changeKey(to: try Fixtures.keyFile("alice.key", in: temp))
            let file = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
            salts.insert(Array(file[38..<70]))
            nonces.insert(Array(file[70..<82]))
            nonces.insert(Array(file[182..<194]))
            layerSalts.insert(try layerSalt(file))
            saves += 1
        }
        #expect(nonces.count == saves * 2)
        #expect(salts.count == 100)
        #expect(layerSalts.count == saves, "a values-layer salt (and so a key stream) used twice")
        print("nonce uniqueness: \(saves) saves, \(nonces.count) distinct header/index nonces, \(salts.count) distinct salts, "
              + "\(layerSalts.count) distinct values-layer salts")
    }

    @Test func canonicallyEquivalentNamesCannotCoexist() throws {
        // "é" (U+00E9) and "e" + U+0301 are equal as Swift Strings but not as bytes. Since
        // issue 10 a name must be NFC, so the decomposed form is refused on input (not
        // normalised): two names that look the same can never both be stored. Lookups stay
        // by exact bytes, so the NFD spelling does not find the NFC entry.
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let store = try SecretStore.create(in: temp.child("v"), key: key, options: .testing())
        try store.put(NewEntry(name: "cafz", secret: secret("1")))
        try store.put(NewEntry(name: "caf\u{E9}", secret: secret("2")))
        try store.put(NewEntry(name: "zz", secret: secret("3")))
        expectVaultError(.invalidInput) { try store.put(NewEntry(name: "cafe\u{301}", secret: secret("4")), replace: true) }
        let reopened = try SecretStore.open(in: temp.child("v"), key: key, options: .testing())
        #expect(try reopened.list().count == 3)
        #expect(try reopened.secret(named: "caf\u{E9}") == secret("2"))
        expectVaultError(.notFound) { try reopened.secret(named: "cafe\u{301}") }
        expectVaultError(.notFound) { try reopened.remove(named: "cafe\u{301}") }
        #expect(try reopened.secret(named: "caf\u{E9}") == secret("2"))
    }
}
