@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import TestScheduling
import VaultCrypto

/// 8 processes doing mixed writes and reads on one store, SIGKILLed at random for a bounded
/// time, with the PostgreSQL server restarted in the middle: every acknowledged write is there,
/// every acknowledged removal is gone, nothing appears that was never written, `verify` is clean,
/// and work resumes after the restart. The server is the test's own (it is restarted).
@Suite(.blockingWork, .enabled(if: PostgresServer.shouldRun, "no PostgreSQL server (VAULT_POSTGRES_URL)"), .serialized)
struct PostgresKillStressTests {
    /// How long the run lasts: VAULT_PG_STRESS_SECONDS, default 20 (bounded to 5...600).
    static let seconds = min(600, max(5, Double(ProcessInfo.processInfo.environment["VAULT_PG_STRESS_SECONDS"] ?? "") ?? 20))

    @Test(.timeLimit(.minutes(15)))
    func sigkilledWritersAndARestartedServerLoseNoAcknowledgedWrite() async throws {
        let server = try PrivatePostgresServer()
        defer { server.cleanUp() }
        let folder = NSTemporaryDirectory() + "vault-pg-stress-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let keyFile = folder + "/store.key"
        _ = FileManager.default.createFile(atPath: keyFile, contents: Data(try SecureRandom.bytes(count: 32)),
                                           attributes: [.posixPermissions: 0o600])
        let key = try VaultKey.fromKeyFile(path: keyFile)
        let configuration = try PostgresServer.configuration(url: server.url, storeName: "stress")
        let created = try await PostgresSecretStore.create(configuration: configuration, key: key, options: PostgresServer.options())
        await created.close()

        let worker = try PostgresWorkers.path()
        var running: [(process: Process, prefix: String)] = []
        var finished: [String] = []
        var incarnation = 0
        func start() throws {
            incarnation += 1
            let prefix = "w\(incarnation)"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: worker)
            process.arguments = ["stress", server.url, "stress", keyFile, prefix, String(Self.seconds + 30)]
            FileManager.default.createFile(atPath: folder + "/\(prefix).log", contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: folder + "/\(prefix).log"))
            process.standardError = FileHandle.nullDevice
            try process.run()
            running.append((process, prefix))
        }
        for _ in 0..<8 { try start() }

        let began = Date()
        var kills = 0
        var restarted = false
        var firstAfterRestart = Int.max
        var rounds = 0
        while Date().timeIntervalSince(began) < Self.seconds, rounds < 10_000 {
            rounds += 1
            try await Task.sleep(for: .milliseconds(Int.random(in: 150...400)))
            let victim = Int.random(in: 0..<running.count)
            kill(running[victim].process.processIdentifier, SIGKILL)
            running[victim].process.waitUntilExit()
            finished.append(running[victim].prefix)
            running.remove(at: victim)
            kills += 1
            if !restarted, Date().timeIntervalSince(began) >= Self.seconds / 2 {
                try server.restart()
                restarted = true
                firstAfterRestart = incarnation + 1
            }
            try start()
        }
        for (process, prefix) in running {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            finished.append(prefix)
        }
        #expect(restarted)

        // What the workers acknowledged, announced and saw.
        var acknowledgedPuts: Set<String> = [], acknowledgedRemovals: Set<String> = [], attempted: Set<String> = []
        var attemptedRemovals: Set<String> = []
        var errors = 0, bad = 0, acknowledgedAfterRestart = 0
        for prefix in finished {
            let log = (try? String(contentsOfFile: folder + "/\(prefix).log", encoding: .utf8)) ?? ""
            let number = Int(prefix.dropFirst()) ?? 0
            for line in log.split(separator: "\n") {
                let parts = line.split(separator: " ").map(String.init)
                switch (parts.first, parts.count) {
                case ("try", 3) where parts[1] == "put": attempted.insert(parts[2])
                case ("try", 3) where parts[1] == "rm": attemptedRemovals.insert(parts[2])
                case ("put", 2):
                    acknowledgedPuts.insert(parts[1])
                    if number >= firstAfterRestart { acknowledgedAfterRestart += 1 }
                case ("rm", 2): acknowledgedRemovals.insert(parts[1])
                case ("err", _): errors += 1
                case ("bad", _): bad += 1
                default: break
                }
            }
        }

        let store = try await PostgresSecretStore.open(configuration: configuration, key: key, options: PostgresServer.options())
        defer { Task { await store.close() } }
        let report = try await store.verify()
        #expect(report.isIntact)
        let present = Set(try await store.list().map(\.name))
        let lost = acknowledgedPuts.subtracting(acknowledgedRemovals).subtracting(attemptedRemovals).subtracting(present)
        let resurrected = acknowledgedRemovals.intersection(present)
        let phantoms = present.subtracting(attempted)
        #expect(lost.isEmpty, "acknowledged writes missing: \(lost.sorted().prefix(10))")
        #expect(resurrected.isEmpty, "acknowledged removals back: \(resurrected.sorted().prefix(10))")
        #expect(phantoms.isEmpty, "entries nobody wrote: \(phantoms.sorted().prefix(10))")
        #expect(bad == 0, "reads that returned another value")
        for name in present.prefix(200) {
            #expect(try await store.secret(named: name) == SecureBytes("value-of-\(name)"))
        }
        #expect(acknowledgedPuts.count >= 50, "too little work to mean anything: \(acknowledgedPuts.count) acknowledged puts")
        #expect(acknowledgedAfterRestart > 0, "no work resumed after the restart")
        print("stress: \(Self.seconds) s, \(kills) SIGKILLs, \(incarnation) worker processes, \(acknowledgedPuts.count) acknowledged puts, "
              + "\(acknowledgedRemovals.count) acknowledged removals, \(errors) failed steps (restart), \(present.count) entries at the end, "
              + "generation \(report.generation), \(acknowledgedAfterRestart) puts acknowledged by workers started after the restart")
    }
}

/// The worker executable next to the test bundle.
enum PostgresWorkers {
    static func path() throws -> String {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for directory in candidates {
            let candidate = directory.appendingPathComponent("VaultPostgresTestWorker").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw TestFailure("cannot find VaultPostgresTestWorker near \(candidates.map(\.path))")
    }
}
