@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// The real PostgreSQL server that `scripts/postgres-server` started for this test run: its URL
/// comes in `VAULT_POSTGRES_URL` (scripts/test sets it). Without it the suites skip on a
/// developer machine and fail under CI=true.
enum PostgresServer {
    static let url = ProcessInfo.processInfo.environment["VAULT_POSTGRES_URL"]
    /// Run the suites: a server is there, or this is CI (where a missing one must fail).
    static let shouldRun = url != nil || ProcessInfo.processInfo.environment["CI"] == "true"

    static var repositoryRoot: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
    }

    static func requireURL() throws -> String {
        guard let url else {
            throw TestFailure("no PostgreSQL server: VAULT_POSTGRES_URL is not set (run the tests through scripts/test, "
                              + "or scripts/postgres-server run -- swift test)")
        }
        return url
    }

    /// A configuration for a store of its own (a fresh store name) on the shared server.
    static func configuration(url: String? = nil, storeName: String = "test-" + UUID().uuidString) throws -> PostgresStoreConfiguration {
        var configuration = try PostgresStoreConfiguration(url: try url ?? requireURL(), storeName: storeName, environment: [:])
        configuration.connectTimeout = .seconds(5)
        return configuration
    }

    /// Test options: the fast KDF policy and a generous operation timeout. The whole suite runs on
    /// two cores with tests that block cooperative threads (child processes, psql), so a healthy
    /// server can take seconds to be heard; only the outage test uses a short timeout.
    static func options(minimumGeneration: UInt64 = 0, timeout: Duration = .seconds(90)) -> PostgresSecretStore.Options {
        var options = PostgresSecretStore.Options(minimumGeneration: minimumGeneration, operationTimeout: timeout)
        options.kdfPolicy = .testing
        return options
    }

    static func newKey() throws -> VaultKey { .keyMaterial(SecureBytes(copying: try SecureRandom.bytes(count: 32))) }

    /// Runs SQL through psql against `url`; returns its unaligned, tuples-only output.
    @discardableResult
    static func psql(_ sql: String, url: String? = nil, sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        BlockingWait.check("waiting for psql", sourceLocation: sourceLocation)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", try url ?? requireURL(), "-v", "ON_ERROR_STOP=1", "-X", "-q", "-A", "-t", "-c", sql]
        return try runCapturing(process) { status, errors in "psql exited \(status): \(errors)" }
    }

    /// Runs scripts/postgres-server with `arguments`; returns its stdout.
    @discardableResult
    static func script(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        BlockingWait.check("waiting for scripts/postgres-server \(arguments.first ?? "")", sourceLocation: sourceLocation)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: repositoryRoot + "/scripts/postgres-server")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestFailure("scripts/postgres-server \(arguments.first ?? "") exited \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A PostgreSQL server of a test's own (the restart test stops it), removed at the end.
final class PrivatePostgresServer {
    let directory: String
    let url: String

    init() throws {
        directory = NSTemporaryDirectory() + "vault-pg-own-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        url = try PostgresServer.script(["start", directory])
    }

    func stop() throws { try PostgresServer.script(["stop", directory]) }
    func restart() throws { try PostgresServer.script(["restart", directory]) }

    func cleanUp() {
        _ = try? PostgresServer.script(["stop", directory])
        try? FileManager.default.removeItem(atPath: directory)
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension SecureBytes {
    /// Test convenience: the bytes of a string.
    init(_ text: String) { self.init(copying: Array(text.utf8)) }
}

/// The VaultError code of what `body` throws, or nil when it does not throw.
func errorCode(_ body: () async throws -> Void) async -> VaultError.Code? {
    do {
        try await body()
        return nil
    } catch let error as VaultError {
        return error.code
    } catch {
        return VaultError.Code(rawValue: "non-vault error: \(type(of: error))")
    }
}

/// A flag one task raises (done) and others poll.
final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.lock(); value = true; lock.unlock() }
    func clear() { lock.lock(); value = false; lock.unlock() }
    var isSet: Bool { lock.lock(); defer { lock.unlock() }; return value }
}
