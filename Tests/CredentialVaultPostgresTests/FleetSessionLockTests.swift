@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// Sign-in and sign-out of a fleet session while a replica is refreshing it: both take the
/// session's advisory lock, so they wait for the refresh and then act on the pair it saved
/// (a sign-out is never undone by the refresh, a sign-in never overwritten by it).
@Suite("PostgreSQL store: sign-in and sign-out wait for a refresh in flight", .blockingWork, .enabled(if: PostgresServer.shouldRun))
struct FleetSessionLockTests {
    /// A refresher that reports when it is called and returns only once released.
    private final class HeldRefresh: @unchecked Sendable {
        private let lock = NSLock()
        private var entered = false
        private var released = false
        func enter() { lock.lock(); entered = true; lock.unlock() }
        func release() { lock.lock(); released = true; lock.unlock() }
        var hasEntered: Bool { lock.lock(); defer { lock.unlock() }; return entered }
        var isReleased: Bool { lock.lock(); defer { lock.unlock() }; return released }
    }

    private static func text(_ bytes: SecureBytes?) -> String {
        bytes?.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } ?? ""
    }

    /// Polls `condition` every 20 ms, at most 60 s; records an issue when it never holds.
    private static func poll(_ what: String, _ condition: () throws -> Bool) async throws {
        for _ in 0..<3000 {
            if try condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("never happened within 60 s: \(what)")
    }

    /// Runs a refresh of "billing" on `refreshing` that is held inside its refresher while `other`
    /// runs on a second store; releases it once `other` has finished or is waiting for the
    /// session's advisory lock (seen in `pg_locks`). Returns the refresh's result and `other`'s.
    private func duringARefresh<T: Sendable>(_ refreshing: PostgresSecretStore, _ second: PostgresSecretStore,
                                             _ other: @escaping @Sendable () async throws -> T) async throws -> (Credentials, T) {
        let held = HeldRefresh(), otherDone = Flag()
        let refresh = Task {
            try await refreshing.validCredentials(session: "billing", isValid: { _ in false }) { _ in
                held.enter()
                try await Self.poll("the refresh released") { held.isReleased }
                return Credentials(accessToken: SecureBytes("at-refreshed"), refreshToken: SecureBytes("rt-refreshed"),
                                   expiresAt: Date().addingTimeInterval(3600))
            }
        }
        try await Self.poll("the refresher called") { held.hasEntered }
        let running = Task {
            defer { otherDone.set() }
            return try await other()
        }
        let bits = UInt64(bitPattern: try second.sessionLockKey("billing"))
        try await Self.poll("the second operation done or waiting for the session's lock") {
            if otherDone.isSet { return true }
            return try PostgresServer.psql("""
                SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
                AND classid = '\(bits >> 32)'::oid AND objid = '\(bits & 0xFFFF_FFFF)'::oid AND objsubid = 1
                """) != "0"
        }
        held.release()
        let refreshed = try await refresh.value
        return (refreshed, try await running.value)
    }

    /// Two stores on one new vault (two replicas), "billing" signed in with an expired access token.
    private static func twoReplicas() async throws -> (PostgresSecretStore, PostgresSecretStore) {
        let configuration = try PostgresServer.configuration()
        let key = try PostgresServer.newKey()
        let replicaA = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        let replicaB = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        try await replicaA.saveCredentials(Credentials(accessToken: SecureBytes("at-1"), refreshToken: SecureBytes("rt-1"),
                                                       expiresAt: Date().addingTimeInterval(-60)), session: "billing")
        return (replicaA, replicaB)
    }

    @Test("a sign-out during a refresh waits for it, removes and returns the refreshed pair; the session stays signed out")
    func signOutWaitsForTheRefresh() async throws {
        let (replicaA, replicaB) = try await Self.twoReplicas()
        let (refreshed, removed) = try await duringARefresh(replicaA, replicaB) {
            try await replicaB.removeCredentials(session: "billing")
        }
        #expect(Self.text(refreshed.accessToken) == "at-refreshed")
        #expect(Self.text(removed?.accessToken) == "at-refreshed", "the pair to revoke is the one the refresh saved")
        #expect(Self.text(removed?.refreshToken) == "rt-refreshed")
        #expect(await errorCode { _ = try await replicaB.storedCredentials(session: "billing") } == .notSignedIn)
        await replicaB.close()
        await replicaA.close()
    }

    @Test("a sign-in during a refresh waits for it and then replaces the refreshed pair")
    func signInWaitsForTheRefresh() async throws {
        let (replicaA, replicaB) = try await Self.twoReplicas()
        let (refreshed, _) = try await duringARefresh(replicaA, replicaB) {
            try await replicaB.saveCredentials(Credentials(accessToken: SecureBytes("at-signin"), refreshToken: SecureBytes("rt-signin"),
                                                           expiresAt: Date().addingTimeInterval(3600)), session: "billing")
        }
        #expect(Self.text(refreshed.accessToken) == "at-refreshed")
        let stored = try await replicaB.storedCredentials(session: "billing")
        #expect(Self.text(stored.accessToken) == "at-signin", "the later sign-in is what stays")
        #expect(Self.text(stored.refreshToken) == "rt-signin")
        await replicaB.close()
        await replicaA.close()
    }

    @Test("a sign-in with a session name or token type the store refuses is invalid input, and nothing is written")
    func signInChecksItsEntries() async throws {
        let (replicaA, replicaB) = try await Self.twoReplicas()
        let generation = try await replicaA.verify().generation
        let tooLong = String(repeating: "s", count: VaultLimits.maximumNameBytes + 1)
        #expect(await errorCode {
            try await replicaA.saveCredentials(Credentials(accessToken: SecureBytes("at-2"), refreshToken: SecureBytes("rt-2")), session: tooLong)
        } == .invalidInput)
        #expect(await errorCode {
            try await replicaA.saveCredentials(Credentials(accessToken: SecureBytes("at-2"), tokenType: String(repeating: "B", count: VaultLimits.maximumLabelBytes + 1)),
                                               session: "billing")
        } == .invalidInput)
        #expect(try await replicaA.verify().generation == generation)
        #expect(Self.text(try await replicaA.storedCredentials(session: "billing").accessToken) == "at-1")
        await replicaB.close()
        await replicaA.close()
    }
}
