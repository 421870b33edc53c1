// The worker modes of the fault tests (Tests/CredentialVaultPostgresTests/PostgresRestartFaultTests):
// processes that keep working on one store while the test restarts its PostgreSQL server.
//
//   VaultPostgresTestWorker fault-write URL STORE KEY_FILE PREFIX TASKS DONE_FILE SECONDS
//       TASKS concurrent loops, each putting new names PREFIX-T-N (value "value-of-NAME"), each
//       put announced before it starts ("try put NAME") and acknowledged only after it committed
//       ("put NAME"); a failed step prints "err CODE", then "why MESSAGE" (VaultError's message,
//       which quotes no secret), and the loop goes on after a short pause.
//   VaultPostgresTestWorker fault-refresh URL STORE KEY_FILE SESSION TOKEN_ENDPOINT CLIENT_ID DONE_FILE SECONDS
//       one loop of validCredentials(session:minTTL: 1 s) refreshing through OAuthClient (the new
//       pair saved as valid for an hour): "ok" per success, "err CODE" per failure, "bad" when the
//       credentials returned are not valid.
//
// Both open the store lazily (again after a failed open) and stop once DONE_FILE exists (the
// test creates it when its last restart is over) and each loop has succeeded once after that:
// the loop prints "recovered SECONDS" then (how long after DONE_FILE was made). After SECONDS without that, it prints "stuck" and the
// process exits 1. Never prints a token. VAULT_PG_FAULT_LOG_LEVEL (debug, trace, …) sends the
// store's and postgres-nio's log to standard error.
import CredentialVault
import CredentialVaultOAuth
import CredentialVaultPostgres
import Foundation
import Logging
import VaultCrypto

/// Runs a fault-test mode when `arguments` name one; returns the process's exit status, or nil
/// for another mode.
func faultWorker(_ arguments: [String]) async -> Int32? {
    if arguments.count == 9, arguments[1] == "fault-write", let tasks = Int(arguments[6]), let seconds = Double(arguments[8]) {
        let opener = StoreOpener(url: arguments[2], storeName: arguments[3], keyFile: arguments[4])
        let prefix = arguments[5], doneFile = arguments[7]
        let deadline = Date().addingTimeInterval(seconds)
        let recovered = await withTaskGroup(of: Bool.self) { group in
            for task in 0..<max(1, tasks) {
                group.addTask {
                    var counter = 0
                    return await faultLoop(doneFile: doneFile, deadline: deadline) {
                        counter += 1
                        let name = "\(prefix)-\(task)-\(counter)"
                        announce("try put \(name)")
                        try await opener.store().put(NewEntry(name: name, secret: SecureBytes(copying: Array("value-of-\(name)".utf8))))
                        announce("put \(name)")
                    }
                }
            }
            var all = true
            for await result in group { all = all && result }
            return all
        }
        await opener.close()
        return recovered ? 0 : 1
    }
    if arguments.count == 10, arguments[1] == "fault-refresh", let tokenEndpoint = URL(string: arguments[6]),
       let seconds = Double(arguments[9]) {
        let opener = StoreOpener(url: arguments[2], storeName: arguments[3], keyFile: arguments[4])
        let session = arguments[5]
        do {
            var authentication = ClientAuthentication.none
            if let path = ProcessInfo.processInfo.environment["VAULT_OAUTH_CLIENT_SECRET_FILE"] {
                let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
                authentication = .clientSecretBasic(SecureBytes(copying: Array(text.utf8)))
            }
            let client = try OAuthClient(configuration: OAuthConfiguration(
                issuer: nil, endpoints: OAuthEndpoints(token: tokenEndpoint), clientID: arguments[7],
                authentication: authentication, retry: .never))
            let recovered = await faultLoop(doneFile: arguments[8], deadline: Date().addingTimeInterval(seconds)) {
                let credentials = try await opener.store().validCredentials(session: session, minTTL: .seconds(1)) { refreshToken in
                    // Valid for an hour by our clock (the test server's tokens live 20 s): a run
                    // longer than that must not add a second, legitimate refresh to the count.
                    var fresh = try await client.refresh(refreshToken)
                    fresh.expiresAt = Date().addingTimeInterval(3600)
                    return fresh
                }
                if let expiresAt = credentials.expiresAt, expiresAt < Date() { announce("bad") } else { announce("ok") }
            }
            try await client.shutdown()
            await opener.close()
            return recovered ? 0 : 1
        } catch {
            announce("err setup \(error)")
            return 2
        }
    }
    return nil
}

/// Repeats `step` (pausing 100 ms between steps, 200 ms after a failure) until `doneFile` exists
/// and a step has succeeded after that ("recovered", true), or until `deadline` ("stuck", false).
func faultLoop(doneFile: String, deadline: Date, _ step: () async throws -> Void) async -> Bool {
    var rounds = 0
    var doneSeen: Date?
    while Date() < deadline, rounds < 100_000 {
        rounds += 1
        if doneSeen == nil, FileManager.default.fileExists(atPath: doneFile) {
            // When the test created it: a step that hung across the restart counts from then.
            doneSeen = (try? FileManager.default.attributesOfItem(atPath: doneFile))?[.modificationDate] as? Date ?? Date()
        }
        do {
            try await step()
            if let doneSeen {
                announce("recovered " + String(format: "%.1f", Date().timeIntervalSince(doneSeen)))
                return true
            }
            try? await Task.sleep(for: .milliseconds(100))
        } catch let error as VaultError {
            announce("err \(error.code.rawValue)")
            announce("why \(error.message)")
            try? await Task.sleep(for: .milliseconds(200))
        } catch {
            announce("err other \(type(of: error))")
            try? await Task.sleep(for: .milliseconds(200))
        }
    }
    announce("stuck")
    return false
}

/// The store, opened on first use and again after an open that failed (the server was down).
actor StoreOpener {
    let url: String, storeName: String, keyFile: String
    private var opening: Task<PostgresSecretStore, any Error>?

    init(url: String, storeName: String, keyFile: String) {
        (self.url, self.storeName, self.keyFile) = (url, storeName, keyFile)
    }

    func store() async throws -> PostgresSecretStore {
        if let opening {
            do { return try await opening.value } catch {
                if self.opening == opening { self.opening = nil }
                throw error
            }
        }
        let (url, storeName, keyFile) = (self.url, self.storeName, self.keyFile)
        let task = Task {
            // 5 s per operation, 35 s for validCredentials (7 ×): the bounds the test holds the loops to.
            var options = PostgresSecretStore.Options(operationTimeout: .seconds(5))
            options.kdfPolicy = .testing
            if let level = ProcessInfo.processInfo.environment["VAULT_PG_FAULT_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) {
                // The store's and postgres-nio's log (the pool's connection attempts) on standard error.
                var logger = Logger(label: "vault.postgres", factory: { StreamLogHandler.standardError(label: $0) })
                logger.logLevel = level
                options.logger = logger
            }
            return try await PostgresSecretStore.open(
                configuration: try PostgresStoreConfiguration(url: url, storeName: storeName),
                key: try VaultKey.fromKeyFile(path: keyFile), options: options)
        }
        opening = task
        return try await store()
    }

    func close() async { await (try? opening?.value)?.close() }
}
