import Foundation
import Logging
import Testing
@testable import CredentialVault
import VaultCrypto

/// The rollback memory: the highest generation of each vault, remembered outside the
/// vault folder and authenticated with the vault's state key.
@Suite struct RollbackMemoryTests {
    struct World {
        let temp: TemporaryDirectory
        let directory: String
        let memory: String
        let key: VaultKey

        /// Fresh options, as a new process would have them.
        func options(accept: Bool = false) -> SecretStore.Options {
            var options = SecretStore.Options.testing()
            options.rollbackMemory = .directory(memory)
            options.acceptRollback = accept
            return options
        }

        var vaultPath: String { directory + "/" + SecretStore.FileNames.vault }

        func copy() throws -> Data { try Data(contentsOf: URL(fileURLWithPath: vaultPath)) }

        func putBack(_ data: Data) throws {
            try data.write(to: URL(fileURLWithPath: vaultPath))
            chmod(vaultPath, 0o600)
        }

        func recordPaths() throws -> [String] {
            guard FileManager.default.fileExists(atPath: memory) else { return [] }
            return try FileManager.default.contentsOfDirectory(atPath: memory).map { memory + "/" + $0 }
        }
    }

    static func makeWorld() throws -> World {
        let temp = try TemporaryDirectory()
        return World(temp: temp, directory: temp.child("vault"), memory: temp.child("state/vault/generations"),
                     key: try Fixtures.keyFile("alice.key", in: temp))
    }

    @Test func aFreshStoreRefusesAnOlderCopyAndAcceptsItOnlyWhenAskedTo() throws {
        let world = try Self.makeWorld()
        defer { world.temp.cleanUp() }
        let store = try SecretStore.create(in: world.directory, key: world.key, options: world.options())
        try store.put(NewEntry(name: "old", secret: secret("1")))
        let old = try world.copy()
        try store.put(NewEntry(name: "new", secret: secret("2")))
        try world.putBack(old)

        let error = expectVaultError(.rollbackDetected) { try SecretStore.open(in: world.directory, key: world.key, options: world.options()) }
        #expect(error?.message.contains("generation 2, older than generation 3") == true)
        #expect(try world.copy() == old)
        // Accepting the restore on purpose resets the memory to it.
        let restored = try SecretStore.open(in: world.directory, key: world.key, options: world.options(accept: true))
        #expect(try restored.list().map(\.name) == ["old"])
        #expect(try SecretStore.open(in: world.directory, key: world.key, options: world.options()).generation == 2)
    }

    @Test func theMemoryIsPrivateAndOutsideTheVaultFolder() throws {
        let world = try Self.makeWorld()
        defer { world.temp.cleanUp() }
        let store = try SecretStore.create(in: world.directory, key: world.key, options: world.options())
        try store.put(NewEntry(name: "a", secret: secret("1")))
        let records = try world.recordPaths()
        #expect(records.count == 1)
        #expect(records.first?.hasSuffix(store.vaultID + ".generation") == true)
        let recordPath = try #require(records.first)
        let record = try #require(RollbackRecord.parse(Array(try Data(contentsOf: URL(fileURLWithPath: recordPath)))))
        #expect(record.generation == store.generation)
        let fileMode = try FileManager.default.attributesOfItem(atPath: try #require(records.first))[.posixPermissions] as? Int
        let directoryMode = try FileManager.default.attributesOfItem(atPath: world.memory)[.posixPermissions] as? Int
        #expect(fileMode == 0o600 && directoryMode == 0o700)
        #expect(try FileManager.default.contentsOfDirectory(atPath: world.directory).sorted() == ["secrets.lock", "secrets.vault"])
        // A read of the same generation writes nothing at all.
        let before = try Data(contentsOf: URL(fileURLWithPath: try #require(records.first)))
        _ = try SecretStore.open(in: world.directory, key: world.key, options: world.options()).list()
        #expect(try Data(contentsOf: URL(fileURLWithPath: try #require(records.first))) == before)
    }

    @Test func rollbackIsRefusedAcrossRotateAndKeyChanges() throws {
        let world = try Self.makeWorld()
        defer { world.temp.cleanUp() }
        let store = try SecretStore.create(in: world.directory, key: world.key, options: world.options())
        try store.put(NewEntry(name: "a", secret: secret("1")))
        let beforeRotate = try world.copy()
        try store.rotate()
        try world.putBack(beforeRotate)
        expectVaultError(.rollbackDetected) { try SecretStore.open(in: world.directory, key: world.key, options: world.options()) }

        let current = try SecretStore.open(in: world.directory, key: world.key, options: world.options(accept: true))
        try current.put(NewEntry(name: "b", secret: secret("2")))
        let beforePasswd = try world.copy()
        let bob = try Fixtures.keyFile("bob.key", in: world.temp)
        try current.changeKey(to: bob)
        // Whoever still holds the old key and an old copy: that copy is refused as a rollback too
        // (the record's key is fixed for the vault's life, so the old file authenticates it).
        try world.putBack(beforePasswd)
        expectVaultError(.rollbackDetected) { try SecretStore.open(in: world.directory, key: world.key, options: world.options()) }
    }

    @Test func aForgedRecordIsIgnoredAndReplaced() throws {
        let world = try Self.makeWorld()
        defer { world.temp.cleanUp() }
        let store = try SecretStore.create(in: world.directory, key: world.key, options: world.options())
        try store.put(NewEntry(name: "a", secret: secret("1")))
        let path = try #require(try world.recordPaths().first)
        var record = try #require(RollbackRecord.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
        // Without the state key an attacker cannot make a record that blocks the vault.
        record = try RollbackRecord(vaultID: record.vaultID, generation: 1_000, slot: KeySlot(kind: .keyMaterial, scrypt: .init(logN: 0, r: 0, p: 0),
                                    salt: [], wrapNonce: [], wrappedDEK: [], wrapTag: []), stateKey: [UInt8](repeating: 7, count: 32))
        try Data(record.encoded()).write(to: URL(fileURLWithPath: path))
        let reopened = try SecretStore.open(in: world.directory, key: world.key, options: world.options())
        #expect(try reopened.list().map(\.name) == ["a"])
        let replaced = try #require(RollbackRecord.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
        #expect(replaced.generation == reopened.generation)
    }

    /// Issue 36 point 11: a record forged in the state folder (zero MAC) that claims a scrypt cost
    /// below the policy's floor, for an ordinary standard-policy passphrase vault (logN 17), does not
    /// block it: the vault opens without `acceptsRaisedKDFCost`, and the record is replaced.
    @Test func aForgedRecordClaimingALowerCostDoesNotBlockThePassphraseVault() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let directory = temp.child("v"), memory = temp.child("memory")
        try KDFCostTests.install(Array(try Fixtures.data("golden/v2-passphrase-logn17.vault")), in: directory)
        var options = SecretStore.Options()   // the standard policy: writes and accepts logN 17 at least
        options.rollbackMemory = .directory(memory)
        let store = try SecretStore.open(in: directory, key: try Fixtures.passphrase(), options: options)
        let path = memory + "/" + store.vaultID + ".generation"
        var record = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        // The record: magic (8), version (1), vault id (16), generation (8), kind (1), logN at 34, then r, p, MAC (32).
        #expect(record[33] == KeySlotKind.scrypt.rawValue && record[34] == 17)
        record[34] = 16
        record.replaceSubrange((record.count - 32)..., with: [UInt8](repeating: 0, count: 32))
        try Data(record).write(to: URL(fileURLWithPath: path))

        let reopened = try SecretStore.open(in: directory, key: try Fixtures.passphrase(), options: options)
        #expect(reopened.generation == store.generation)
        let replaced = try #require(RollbackRecord.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
        #expect(replaced.scrypt.logN == 17, "the forged record was replaced by an authentic one")
    }

    @Test func aVersion1CopyIsRefusedOnceTheVaultMovedToVersion2() throws {
        let world = try Self.makeWorld()
        defer { world.temp.cleanUp() }
        try FileManager.default.createDirectory(atPath: world.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let v1 = try Fixtures.data("golden/v1-keyfile.vault")
        try world.putBack(v1)
        let store = try SecretStore.open(in: world.directory, key: world.key, options: world.options())
        #expect(try world.recordPaths().isEmpty, "a v1 file has no state key: nothing is remembered until its first write")
        try store.put(NewEntry(name: "added", secret: secret("x")))
        #expect(try world.recordPaths().count == 1)
        try world.putBack(v1)
        expectVaultError(.rollbackDetected) { try SecretStore.open(in: world.directory, key: world.key, options: world.options()) }
    }

    @Test func deletingTheMemoryLetsAnOlderCopyThrough() throws {
        // The documented limit: the memory is a file the user (and whoever acts as the user) can delete.
        let world = try Self.makeWorld()
        defer { world.temp.cleanUp() }
        let store = try SecretStore.create(in: world.directory, key: world.key, options: world.options())
        try store.put(NewEntry(name: "a", secret: secret("1")))
        let old = try world.copy()
        try store.put(NewEntry(name: "b", secret: secret("2")))
        try world.putBack(old)
        for path in try world.recordPaths() { try FileManager.default.removeItem(atPath: path) }
        #expect(try SecretStore.open(in: world.directory, key: world.key, options: world.options()).list().map(\.name) == ["a"])
    }

    @Test func standardLocationFollowsXDGStateHome() {
        #expect(RollbackMemory.standard.directory(environment: ["XDG_STATE_HOME": "/s", "HOME": "/h"]) == "/s/vault/generations")
        #expect(RollbackMemory.standard.directory(environment: ["XDG_STATE_HOME": "relative", "HOME": "/h"])
                == "/h/.local/state/vault/generations")
        #expect(RollbackMemory.standard.directory(environment: ["HOME": "/h"]) == "/h/.local/state/vault/generations")
        #expect(RollbackMemory.disabled.directory(environment: ["HOME": "/h"]) == nil)
        #expect(RollbackMemory.directory("/x").directory(environment: [:]) == "/x")
    }

    /// Another process commits between this read of the file and of the record, every time:
    /// the record is then newer than the file just read, which is not a rollback (found by
    /// scripts/stress in CI, where fresh `vault get`s raced busy writers).
    @Test func aCommitBetweenReadingTheFileAndTheRecordIsNotARollback() throws {
        let world = try Self.makeWorld()
        defer { world.temp.cleanUp() }
        let writer = try SecretStore.create(in: world.directory, key: world.key, options: world.options())
        try writer.put(NewEntry(name: "kept", secret: secret("1")))
        let racer = RacingCommits(writer: writer, limit: 5)
        let secretRead = try IOFaultInjection.$afterVaultFileRead.withValue({ racer.commit() }) {
            try SecretStore.open(in: world.directory, key: world.key, options: world.options()).secret(named: "kept")
        }
        #expect(secretRead.withUnsafeBytes { Array($0) } == Array("1".utf8))
        #expect(racer.commits >= 2, "the race ran on the retry too (\(racer.commits) commits)")
        // A real rollback is still refused, with the record read before the file.
        let old = try world.copy()
        try writer.put(NewEntry(name: "newer", secret: secret("2")))
        try world.putBack(old)
        expectVaultError(.rollbackDetected) { try SecretStore.open(in: world.directory, key: world.key, options: world.options()) }
    }
}

/// Commits one write through `writer` each time it is called (up to `limit`), ignoring the
/// calls made by that write's own read.
private final class RacingCommits: @unchecked Sendable {
    private let lock = NSLock()
    private let writer: SecretStore
    private let limit: Int
    private var busy = false
    private var count = 0

    init(writer: SecretStore, limit: Int) {
        self.writer = writer
        self.limit = limit
    }

    var commits: Int { lock.withLock { count } }

    func commit() {
        let go = lock.withLock { () -> Bool in
            guard !busy, count < limit else { return false }
            busy = true
            count += 1
            return true
        }
        guard go else { return }
        defer { lock.withLock { busy = false } }
        try? writer.put(NewEntry(name: "racer-\(commits)", secret: secret("x")))
    }

    /// The PostgreSQL stores' generation record (`StoreGenerationMemory`): only a record made with
    /// the store's key is believed; an altered, truncated or foreign one is ignored, never trusted;
    /// a lower generation never replaces a higher one unless a rollback is accepted.
    @Test static func onlyAnAuthenticRecordIsBelievedAndItNeverGoesDown() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let directory = temp.child("generations")
        let memory = StoreGenerationMemory(memory: .directory(directory), logger: Logging.Logger(label: "test"))
        let storeID = try SecureRandom.bytes(count: 16)
        let key = SymmetricKey(bytes: try SecureRandom.secureBytes(count: 32))
        #expect(memory.read(storeID: storeID, key: key) == nil, "nothing remembered yet")
        memory.write(storeID: storeID, generation: 7, key: key)
        #expect(memory.read(storeID: storeID, key: key) == 7)
        memory.write(storeID: storeID, generation: 5, key: key)
        #expect(memory.read(storeID: storeID, key: key) == 7, "a process that saw less does not lower it")
        memory.write(storeID: storeID, generation: 5, key: key, replacing: true)
        #expect(memory.read(storeID: storeID, key: key) == 5, "an accepted rollback does")
        #expect(memory.read(storeID: storeID, key: SymmetricKey(bytes: try SecureRandom.secureBytes(count: 32))) == nil,
                "another store's key does not authenticate it")

        let path = directory + "/pg-" + storeID.map { String(format: "%02x", $0) }.joined() + ".generation"
        let original = try Data(contentsOf: URL(fileURLWithPath: path))
        for offset in [0, 8, 9, 30, 40, 64] {
            var flipped = original
            flipped[offset] ^= 0x01
            try flipped.write(to: URL(fileURLWithPath: path))
            #expect(memory.read(storeID: storeID, key: key) == nil, "flipped byte \(offset) is not believed")
        }
        try original.prefix(40).write(to: URL(fileURLWithPath: path))
        #expect(memory.read(storeID: storeID, key: key) == nil, "a truncated record is not believed")
        // A forged higher generation (no key) is ignored, and the next write replaces it.
        memory.write(storeID: storeID, generation: 9, key: key)
        #expect(memory.read(storeID: storeID, key: key) == 9)
    }
}
