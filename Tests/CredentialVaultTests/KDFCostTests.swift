import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

/// A header whose scrypt cost was raised above what this build writes is "suspicious parameters",
/// refused before scrypt runs, not a slow "wrong key"; this machine's rollback record (unauthenticated
/// before the key is derived) neither raises nor lowers that ceiling.
@Suite(.blockingWork) struct KDFCostTests {
    static func fixChecksum(_ bytes: inout [UInt8]) throws {
        let layout = try #require(HeaderLayout.forMajor(bytes[8]))
        let checksum = try SHA256.hash(Array(bytes[0..<layout.checksummedEnd]))
        bytes.replaceSubrange(layout.checksummedEnd..<layout.headerByteCount, with: checksum[0..<8])
    }

    static func install(_ bytes: [UInt8], in directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = directory + "/" + SecretStore.FileNames.vault
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
    }

    @Test(arguments: ["golden/v2-passphrase-logn17.vault", "golden/v1-passphrase-logn17.vault"])
    func logN20InAStandardVaultIsSuspiciousAndRefusedBeforeScrypt(_ fixture: String) throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        var bytes = Array(try Fixtures.data(fixture))
        #expect(bytes[29] == 17)
        bytes[29] = 20   // inside the policy's 17...20, but 1 GiB and seconds per open
        try Self.fixChecksum(&bytes)
        try Self.install(bytes, in: temp.child("v"))
        var options = SecretStore.Options()
        options.rollbackMemory = .disabled
        var error: VaultError?
        // CPU time of this thread, which a loaded machine does not inflate; scrypt at logN 20 uses seconds of it.
        let used = ThreadCPUTime.measure {
            error = expectVaultError(.suspiciousKDFParameters) {
                try SecretStore.open(in: temp.child("v"), key: try Fixtures.passphrase(), options: options)
            }
        }
        #expect(used < .milliseconds(500), "used \(used) of CPU: scrypt ran")
        #expect(error?.message.contains("logN 20") == true)
        #expect(error?.message.contains("1 GiB") == true)
        #expect(error?.message.contains("passphrase") == false, "not reported as a wrong key")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: temp.child("v/secrets.vault")))) == bytes, "nothing written")
    }

    @Test func aRaisedCostIsRefusedEvenWithARecordAndAcceptingRunsTheKDF() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        var options = SecretStore.Options.testing()   // KDF policy: writes logN 10, accepts 10...12
        options.rollbackMemory = .directory(temp.child("memory"))
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.passphrase(), options: options)
        try store.put(NewEntry(name: "a", secret: secret("1")))
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        #expect(bytes[29] == 10)
        bytes[29] = 11
        try Self.fixChecksum(&bytes)
        try Self.install(bytes, in: temp.child("v"))

        let error = expectVaultError(.suspiciousKDFParameters) {
            try SecretStore.open(in: temp.child("v"), key: try Fixtures.passphrase(), options: options)
        }
        #expect(error?.message.contains("more than logN 10 this build writes") == true)
        // --accept-rollback is about generations: it does not let a raised cost through.
        var rollingBack = options
        rollingBack.acceptRollback = true
        expectVaultError(.suspiciousKDFParameters) {
            try SecretStore.open(in: temp.child("v"), key: try Fixtures.passphrase(), options: rollingBack)
        }
        // Accepting the cost on purpose lets scrypt run; the edited header then fails its authentication as it must.
        var accepting = options
        accepting.acceptsRaisedKDFCost = true
        expectVaultError(.wrongKey) { try SecretStore.open(in: temp.child("v"), key: try Fixtures.passphrase(), options: accepting) }
    }

    /// A forged rollback record (the state folder is the user's, but the record cannot be
    /// authenticated before the key is derived) never raises the ceiling: a header raised to the
    /// record's logN is still refused before scrypt runs.
    @Test func aForgedRecordWithAHigherCostDoesNotRaiseTheCeiling() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        var options = SecretStore.Options.testing()   // writes logN 10, accepts 10...12
        options.rollbackMemory = .directory(temp.child("memory"))
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.passphrase(), options: options)
        try store.put(NewEntry(name: "a", secret: secret("1")))
        // The record: magic (8), version (1), vault id (16), generation (8), kind (1), logN at 34.
        let recordPath = temp.child("memory") + "/" + store.vaultID + ".generation"
        var record = Array(try Data(contentsOf: URL(fileURLWithPath: recordPath)))
        #expect(record[34] == 10)
        record[34] = 12
        try Data(record).write(to: URL(fileURLWithPath: recordPath))
        var bytes = Array(try Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        bytes[29] = 12
        try Self.fixChecksum(&bytes)
        try Self.install(bytes, in: temp.child("v"))
        let error = expectVaultError(.suspiciousKDFParameters) {
            try SecretStore.open(in: temp.child("v"), key: try Fixtures.passphrase(), options: options)
        }
        #expect(error?.message.contains("logN 12") == true)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: store.vaultPath))) == bytes, "nothing written")
    }

    @Test func aKeyChangeHereUpdatesTheRememberedParameters() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        var options = SecretStore.Options.testing()
        options.rollbackMemory = .directory(temp.child("memory"))
        let store = try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: options)
        let record = { () throws -> RollbackRecord in
            let path = temp.child("memory") + "/" + store.vaultID + ".generation"
            return try #require(RollbackRecord.parse(Array(try Data(contentsOf: URL(fileURLWithPath: path)))))
        }
        #expect(try record().slotKind == KeySlotKind.keyMaterial.rawValue)
        try store.changeKey(to: try Fixtures.passphrase())
        #expect(try record().slotKind == KeySlotKind.scrypt.rawValue)
        #expect(try record().scrypt == Scrypt.Parameters(logN: 10, r: 8, p: 1))
        #expect(try SecretStore.open(in: temp.child("v"), key: try Fixtures.passphrase(), options: options).list().isEmpty)
    }
}
