@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import VaultCrypto

/// The bucketed layout's pieces that need no server: bucket numbers, sealing, the standby check,
/// the per-statement deadline and the `.buckets` record.
@Suite("PostgreSQL buckets: codec, standby check, deadline, bucket record")
struct PostgresBucketUnitTests {
    private let vaultID = Array(repeating: UInt8(7), count: 16)

    private func keys() throws -> PostgresDataKeys {
        try PostgresDataKeys(dek: SymmetricKey(bytes: SecureBytes(copying: try SecureRandom.bytes(count: 32))), vaultID: vaultID)
    }

    private func configuration() throws -> PostgresStoreConfiguration {
        try PostgresStoreConfiguration(url: "postgres://vault@127.0.0.1:1/vault", storeName: "s", environment: [:])
    }

    @Test("a lookup's bucket is its first 4 bytes, big-endian, shifted right by 32 − bits")
    func bucketIndex() {
        let lookup: [UInt8] = [0xAB, 0xCD, 0xEF, 0x12] + Array(repeating: 0, count: 28)
        #expect(PostgresBucket.index(of: lookup, bits: 12) == 0xABC)
        #expect(PostgresBucket.index(of: lookup, bits: 16) == 0xABCD)
        #expect(PostgresBucket.index(of: lookup, bits: 4) == 0xA)
    }

    @Test("a bucket opens only under its own number and store name; its list is checked")
    func bucketSealing() throws {
        let keys = try keys()
        let lookup: [UInt8] = [0x00, 0x10] + Array(repeating: 1, count: 30)   // bucket 1 of 4,096
        let bucket = PostgresBucket(generation: 5, rows: [lookup: 4])
        let sealed = try bucket.sealed(vaultID: vaultID, storeName: "s", bucket: 1, keys: keys)
        #expect(try PostgresBucket.open(sealed, vaultID: vaultID, storeName: "s", bucket: 1, bits: 12, keys: keys) == bucket)
        #expect(throws: VaultError.self) { try PostgresBucket.open(sealed, vaultID: self.vaultID, storeName: "s", bucket: 2, bits: 12, keys: keys) }
        #expect(throws: VaultError.self) { try PostgresBucket.open(sealed, vaultID: self.vaultID, storeName: "t", bucket: 1, bits: 12, keys: keys) }
        // A list naming a lookup of another bucket, or a row newer than the bucket, is tampered.
        let misplaced = try PostgresBucket(generation: 5, rows: [lookup: 4]).sealed(vaultID: vaultID, storeName: "s", bucket: 3, keys: keys)
        #expect(throws: VaultError.self) { try PostgresBucket.open(misplaced, vaultID: self.vaultID, storeName: "s", bucket: 3, bits: 12, keys: keys) }
        let newer = try PostgresBucket(generation: 3, rows: [lookup: 4]).sealed(vaultID: vaultID, storeName: "s", bucket: 1, keys: keys)
        #expect(throws: VaultError.self) { try PostgresBucket.open(newer, vaultID: self.vaultID, storeName: "s", bucket: 1, bits: 12, keys: keys) }
    }

    @Test("a version 3 state is 37 bytes, binds the store name, and is refused by the version 2 reader as unsupported")
    func stateVersion3() throws {
        let keys = try keys()
        let sealed = try PostgresStateV3(bucketBits: 12).sealed(vaultID: vaultID, storeName: "s", keys: keys)
        #expect(sealed.count == 37 && sealed.first == 3)
        #expect(try PostgresStateV3.open(sealed, vaultID: vaultID, storeName: "s", keys: keys).bucketBits == 12)
        do {
            _ = try PostgresStateV3.open(sealed, vaultID: vaultID, storeName: "other", keys: keys)
            Issue.record("opened under another name")
        } catch let error as VaultError { #expect(error.code == .tampered) }
        do {
            _ = try PostgresVaultState.open(sealed, vaultID: vaultID, storeName: "s", keys: keys)
            Issue.record("the version 2 reader opened a version 3 state")
        } catch let error as VaultError { #expect(error.code == .unsupportedVersion) }
    }

    @Test("the read statement's pg_is_in_recovery() column is checked: a standby's answer is refused")
    func standbyAnswerRefused() throws {
        let configuration = try configuration()
        #expect(throws: PostgresStandbyAnswer.self) {
            try PostgresBucketRead.refuseStandby(inRecovery: true, configuration: configuration)
        }
        #expect(throws: Never.self) { try PostgresBucketRead.refuseStandby(inRecovery: false, configuration: configuration) }
    }

    @Test("the .buckets record: round trip, merged by maximum, replaced on an accepted rollback, ignored when altered")
    func bucketRecord() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vault-pgb-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let memory = StoreBucketMemory(memory: .directory(directory))
        let key = SymmetricKey(bytes: SecureBytes(copying: try SecureRandom.bytes(count: 32)))
        var generations = [UInt64](repeating: 0, count: 16)
        generations[3] = 9
        memory.write(storeID: vaultID, bucketBits: 4, generations: generations, key: key)
        #expect(memory.read(storeID: vaultID, bucketBits: 4, key: key) == generations)
        var lower = generations
        lower[3] = 2
        lower[5] = 1
        memory.write(storeID: vaultID, bucketBits: 4, generations: lower, key: key)
        var merged = generations
        merged[5] = 1
        #expect(memory.read(storeID: vaultID, bucketBits: 4, key: key) == merged)
        memory.write(storeID: vaultID, bucketBits: 4, generations: lower, key: key, replacing: [3])
        #expect(memory.read(storeID: vaultID, bucketBits: 4, key: key) == lower)
        #expect(memory.remembers(storeID: vaultID, key: key))
        #expect(!memory.remembers(storeID: Array(repeating: 8, count: 16), key: key))
        #expect(memory.read(storeID: vaultID, bucketBits: 4, key: SymmetricKey(bytes: SecureBytes(copying: try SecureRandom.bytes(count: 32)))) == nil)
        #expect(memory.read(storeID: vaultID, bucketBits: 5, key: key) == nil)
        let path = directory + "/pg-" + vaultID.map { String(format: "%02x", $0) }.joined() + ".buckets"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes[30] ^= 1
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(memory.read(storeID: vaultID, bucketBits: 4, key: key) == nil)
    }

    @Test("the .buckets record: writers at once keep each other's buckets (flock around read-merge-write); an altered record is not remembered")
    func bucketRecordConcurrentWriters() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vault-pgb-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let key = SymmetricKey(bytes: SecureBytes(copying: try SecureRandom.bytes(count: 32)))
        let storeID = vaultID
        let directoryMemory = RollbackMemory.directory(directory)
        await withTaskGroup(of: Void.self) { group in
            for writer in 0..<16 {
                group.addTask {
                    let memory = StoreBucketMemory(memory: directoryMemory)
                    for round in 0..<20 {
                        var generations = [UInt64](repeating: 0, count: 1 << 8)
                        generations[writer * 16 + round % 16] = UInt64(round + 1)
                        memory.write(storeID: storeID, bucketBits: 8, generations: generations, key: key)
                    }
                }
            }
        }
        let record = try #require(StoreBucketMemory(memory: directoryMemory).read(storeID: storeID, bucketBits: 8, key: key))
        for writer in 0..<16 {
            for slot in 0..<16 {
                // Rounds slot and slot + 16 (when under 20) wrote this bucket; the higher stays.
                let expected = UInt64(slot + 16 < 20 ? slot + 17 : slot + 1)
                #expect(record[writer * 16 + slot] == expected, "bucket \(writer * 16 + slot)")
            }
        }
        #expect(FileManager.default.fileExists(atPath: directory + "/pg-" + storeID.map { String(format: "%02x", $0) }.joined() + ".buckets.lock"))
    }

    @Test("a version 3 state whose reserved bytes are not zero is an unsupported version")
    func stateReservedBytes() throws {
        let keys = try keys()
        let aad = PostgresStateV3.aad(vaultID: vaultID, storeName: "s")
        let good = try PostgresStateV3(bucketBits: 12).sealed(vaultID: vaultID, storeName: "s", keys: keys)
        #expect(try PostgresStateV3.open(good, vaultID: vaultID, storeName: "s", keys: keys).bucketBits == 12)
        let plain: [UInt8] = [12, 0, 0, 1, 0, 0, 0, 0]
        let odd = [PostgresStateV3.version] + (try AES256GCM.seal(plain, using: keys.state, authenticating: aad).combined)
        #expect(throws: VaultError.self) { try PostgresStateV3.open(odd, vaultID: self.vaultID, storeName: "s", keys: keys) }
        do {
            _ = try PostgresStateV3.open(odd, vaultID: vaultID, storeName: "s", keys: keys)
        } catch let error as VaultError {
            #expect(error.code == .unsupportedVersion)
        }
    }

    @Test("an accepted rollback lowers one bucket and the sum; the buckets read are tracked")
    func acceptedRollback() {
        var seen = PostgresBucketGenerations(remembered: [0, 3, 0, 2])
        #expect(seen.observed.isEmpty)
        seen.accept(1, at: 1)
        seen.raise(3, to: 2)
        #expect(seen.sum == 3 && seen.record(bucketCount: 4) == [0, 1, 0, 2] && seen.observed == [1, 3])
    }

    @Test("the per-bucket memory's sum only grows")
    func generationsSum() {
        var seen = PostgresBucketGenerations(remembered: [0, 3, 0, 2])
        #expect(seen.sum == 5 && seen.floor(1) == 3)
        seen.raise(1, to: 2)
        #expect(seen.sum == 5)
        seen.raise(1, to: 7)
        seen.raise(9, to: 1)
        #expect(seen.sum == 10 && seen.record(bucketCount: 4) == [0, 7, 0, 2])
    }

    /// Wall-clock assertions: `scripts/test` runs them in a process of their own (`.timing`).
    @Suite(.timing, .serialized) struct Timed {
        private func configuration() throws -> PostgresStoreConfiguration {
            try PostgresStoreConfiguration(url: "postgres://vault@127.0.0.1:1/vault", storeName: "s", environment: [:])
        }

        @Test("with progress, the deadline applies per statement; a silent server is 'no answer', a stalled one says it answered")
        func perStatementDeadline() async throws {
            let configuration = try configuration()
            let progress = PostgresProgress()
            // Six 100 ms statements under a 300 ms deadline: 600 ms in all, never 300 ms without an answer.
            let value = try await PostgresErrors.guarding(configuration, timeout: .milliseconds(300), progress: progress, watch: PostgresDeadlineWatch()) {
                for _ in 0..<6 {
                    try await Task.sleep(for: .milliseconds(100))
                    progress.tick()
                }
                return 42
            }
            #expect(value == 42)
            do {
                _ = try await PostgresErrors.guarding(configuration, timeout: .milliseconds(200), progress: PostgresProgress(), watch: PostgresDeadlineWatch()) {
                    try await Task.sleep(for: .seconds(5))
                }
                Issue.record("no deadline")
            } catch let error as VaultError {
                #expect(error.code == .serverUnavailable)
                #expect(error.message.contains("no answer within"))
            }
            let stalled = PostgresProgress()
            do {
                _ = try await PostgresErrors.guarding(configuration, timeout: .milliseconds(200), progress: stalled, watch: PostgresDeadlineWatch()) {
                    stalled.tick()
                    try await Task.sleep(for: .seconds(5))
                }
                Issue.record("no deadline")
            } catch let error as VaultError {
                #expect(error.code == .serverUnavailable)
                #expect(error.message.contains("answered 1 statements"))
            }
        }
    }
}
