// A worker process for the fleet refresh test (Tests/CredentialVaultOAuthTests): one process
// stands for one replica of a server app, with its own connection pool to the PostgreSQL store.
//
//   VaultPostgresTestWorker refresh URL STORE KEY_FILE SESSION TOKEN_ENDPOINT CLIENT_ID TASKS START_AT_MS
//       opens the store, waits until START_AT_MS (ms since 1970), then runs TASKS concurrent
//       validCredentials(session:) calls that refresh through OAuthClient; prints
//       "ok TASKS DISTINCT" where DISTINCT is how many different access tokens the tasks got.
//
//   VaultPostgresTestWorker stress URL STORE KEY_FILE PREFIX SECONDS
//       mixed writes and reads on the store for SECONDS (or until killed): puts of new names
//       PREFIX-N (value "value-of-PREFIX-N"), removals and reads of its own names. Each step is
//       announced before it starts ("try put NAME", "try rm NAME") and acknowledged only after its
//       transaction committed ("put NAME", "rm NAME"), each line one write(2) to standard output,
//       so a SIGKILL between the commit and the acknowledgement leaves the step unacknowledged,
//       never the other way round. A failed step prints "err CODE" and the loop goes on (the
//       PostgreSQL restart test); a read that returns the wrong value prints "bad NAME".
//
// VAULT_OAUTH_CLIENT_SECRET_FILE names the confidential client's secret. Never prints a token.
import CredentialVault
import CredentialVaultOAuth
import CredentialVaultPostgres
import Foundation
import VaultCrypto

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = CommandLine.arguments
if arguments.count == 7, arguments[1] == "stress", let seconds = Double(arguments[6]) {
    await stress(url: arguments[2], storeName: arguments[3], keyFile: arguments[4], prefix: arguments[5], seconds: seconds)
    exit(0)
}
if let status = await faultWorker(arguments) { exit(status) }
guard arguments.count == 10, arguments[1] == "refresh", let tasks = Int(arguments[8]), let startAt = Double(arguments[9]),
      let tokenEndpoint = URL(string: arguments[6]) else {
    fail("usage: VaultPostgresTestWorker refresh URL STORE KEY_FILE SESSION TOKEN_ENDPOINT CLIENT_ID TASKS START_AT_MS")
}
let (url, storeName, keyFile, session, clientID) = (arguments[2], arguments[3], arguments[4], arguments[5], arguments[7])

do {
    var options = PostgresSecretStore.Options(operationTimeout: .seconds(90))
    options.kdfPolicy = .testing
    let store = try await PostgresSecretStore.open(
        configuration: try PostgresStoreConfiguration(url: url, storeName: storeName),
        key: try VaultKey.fromKeyFile(path: keyFile), options: options)
    var authentication = ClientAuthentication.none
    if let path = ProcessInfo.processInfo.environment["VAULT_OAUTH_CLIENT_SECRET_FILE"] {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        authentication = .clientSecretBasic(SecureBytes(copying: Array(text.utf8)))
    }
    let client = try OAuthClient(configuration: OAuthConfiguration(
        issuer: nil, endpoints: OAuthEndpoints(token: tokenEndpoint), clientID: clientID,
        authentication: authentication, retry: .never))
    let wait = startAt / 1000 - Date().timeIntervalSince1970
    if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
    let tokens = try await withThrowingTaskGroup(of: SecureBytes.self) { group in
        for _ in 0..<tasks {
            group.addTask {
                try await store.validCredentials(session: session, minTTL: .seconds(1)) { refreshToken in
                    try await client.refresh(refreshToken)
                }.accessToken
            }
        }
        var all: [SecureBytes] = []
        for try await token in group { all.append(token) }
        return all
    }
    var distinct: [SecureBytes] = []
    for token in tokens where !distinct.contains(token) { distinct.append(token) }
    print("ok \(tokens.count) \(distinct.count)")
    try await client.shutdown()
    await store.close()
} catch {
    fail("worker: \(error)")
}

/// One line on standard output in one unbuffered write(2).
func announce(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// The stress loop (see the header).
func stress(url: String, storeName: String, keyFile: String, prefix: String, seconds: Double) async {
    let deadline = Date().addingTimeInterval(seconds)
    var store: PostgresSecretStore?
    var live: [String] = []
    var counter = 0
    var generator = SystemRandomNumberGenerator()
    while Date() < deadline {
        do {
            if store == nil {
                var options = PostgresSecretStore.Options(operationTimeout: .seconds(5))
                options.kdfPolicy = .testing
                store = try await PostgresSecretStore.open(
                    configuration: try PostgresStoreConfiguration(url: url, storeName: storeName),
                    key: try VaultKey.fromKeyFile(path: keyFile), options: options)
            }
            guard let store else { continue }
            let roll = Int.random(in: 0..<10, using: &generator)
            if roll < 6 || live.isEmpty {
                counter += 1
                let name = "\(prefix)-\(counter)"
                announce("try put \(name)")
                try await store.add(NewEntry(name: name, secret: SecureBytes(copying: Array("value-of-\(name)".utf8))))
                announce("put \(name)")
                live.append(name)
            } else if roll < 8 {
                let name = live.remove(at: Int.random(in: 0..<live.count, using: &generator))
                announce("try rm \(name)")
                try await store.remove(named: name)
                announce("rm \(name)")
            } else {
                let name = live[Int.random(in: 0..<live.count, using: &generator)]
                let entry = try await store.entry(named: name)
                if entry.secret != SecureBytes(copying: Array("value-of-\(name)".utf8)) { announce("bad \(name)") }
            }
        } catch let error as VaultError {
            announce("err \(error.code)")
            try? await Task.sleep(for: .milliseconds(50))
        } catch {
            announce("err other")
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
    await store?.close()
}
