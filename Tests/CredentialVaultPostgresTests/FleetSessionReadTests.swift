@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// A fleet session's tokens read while other replicas write them: every read sees one snapshot
/// of the state row and both token rows (no false "tampered", no access token of one save with
/// the refresh token of another), and a row deleted behind the store is still refused.
@Suite("PostgreSQL store: a fleet session's tokens read while other replicas write them", .blockingWork,
       .enabled(if: PostgresServer.shouldRun))
struct FleetSessionReadTests {
    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    private func rowCondition(_ store: PostgresSecretStore, name: String, owner: String) throws -> String {
        let lookup = try PostgresRowCodec.lookup(owner: owner, name: name, keys: store.keys)
        return "vault_id = decode('\(hex(store.vaultID))', 'hex') AND lookup = decode('\(hex(lookup))', 'hex')"
    }

    private func pair(_ index: Int) -> Credentials {
        Credentials(accessToken: SecureBytes("at-\(index)"), refreshToken: SecureBytes("rt-\(index)"),
                    expiresAt: Date().addingTimeInterval(3600))
    }

    /// What the readers saw: reads done, reads that failed (with their errors), and torn pairs.
    private final class Tally: @unchecked Sendable {
        private let lock = NSLock()
        private var reads = 0
        private var failures: [String] = []
        private var torn = 0
        func read(_ credentials: Credentials) {
            let access = credentials.accessToken.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            let refresh = credentials.refreshToken?.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } ?? ""
            lock.lock(); defer { lock.unlock() }
            reads += 1
            if access.dropFirst(3) != refresh.dropFirst(3) { torn += 1 }
        }
        func failed(_ error: any Error) { lock.lock(); failures.append("\(error)"); lock.unlock() }
        var summary: (reads: Int, failures: [String], torn: Int) { lock.lock(); defer { lock.unlock() }; return (reads, failures, torn) }
    }

    @Test("a replica saving the session's tokens 150 times while 3 others read them: no false tampered, no torn pair")
    func readsSeeOneSnapshot() async throws {
        let configuration = try PostgresServer.configuration()
        let key = try PostgresServer.newKey()
        let writer = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        try await writer.saveCredentials(pair(0), session: "billing")
        // Another session's writes move the generation too: reads of "billing" must not care.
        try await writer.saveCredentials(pair(0), session: "payroll")
        let reader = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        let tally = Tally(), done = Flag()
        let saves = 150, readers = 3, maximumReadsEach = 3000
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { done.set() }
                for index in 1...saves {
                    try await writer.saveCredentials(self.pair(index), session: index % 5 == 0 ? "payroll" : "billing")
                }
            }
            for number in 0..<readers {
                group.addTask {
                    // Bounded in count; stops early once the writer is done.
                    for read in 0..<maximumReadsEach {
                        if done.isSet { break }
                        do {
                            if (number + read) % 2 == 0 {
                                tally.read(try await reader.storedCredentials(session: "billing"))
                            } else {
                                // The single-flight path (advisory lock, then the read), with nothing to refresh.
                                tally.read(try await reader.validCredentials(session: "billing", isValid: { _ in true }) { _ in
                                    throw VaultError(.invalidInput, "no refresh expected")
                                })
                            }
                        } catch {
                            tally.failed(error)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        let summary = tally.summary
        #expect(summary.failures.isEmpty, "\(summary.failures.count) of \(summary.reads + summary.failures.count) reads failed: \(summary.failures.prefix(3))")
        #expect(summary.torn == 0, "\(summary.torn) reads mixed the tokens of two saves")
        #expect(summary.reads > 0)
        let last = try await reader.storedCredentials(session: "billing")
        #expect(last.accessToken == SecureBytes("at-149") && last.refreshToken == SecureBytes("rt-149"))
        #expect(try await reader.verify().failures.isEmpty)
        await reader.close()
        await writer.close()
    }

    @Test("a session's token row deleted behind the store is refused as tampered, not read as signed out or without a refresh token",
          arguments: [PostgresSecretStore.SessionEntryNames.accessToken, PostgresSecretStore.SessionEntryNames.refreshToken])
    func aDeletedTokenRowIsTampered(name: String) async throws {
        let store = try await PostgresSecretStore.create(configuration: try PostgresServer.configuration(), key: try PostgresServer.newKey(),
                                                         options: PostgresServer.options())
        try await store.saveCredentials(pair(1), session: "billing")
        try PostgresServer.psql("DELETE FROM vault_entries WHERE \(try rowCondition(store, name: name, owner: "billing"))")
        #expect(await errorCode { _ = try await store.storedCredentials(session: "billing") } == .tampered)
        let sent = SentTokens()
        #expect(await errorCode {
            _ = try await store.validCredentials(session: "billing", isValid: { _ in false }) { token in
                sent.add(token)
                return self.pair(2)
            }
        } == .tampered)
        #expect(sent.count == 0)
        #expect(await errorCode { _ = try await store.removeCredentials(session: "billing") } == .tampered)
        await store.close()
    }
}
