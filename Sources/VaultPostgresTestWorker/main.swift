// A worker process for the fleet refresh test (Tests/CredentialVaultOAuthTests): one process
// stands for one replica of a server app, with its own connection pool to the PostgreSQL store.
//
//   VaultPostgresTestWorker refresh URL STORE KEY_FILE SESSION TOKEN_ENDPOINT CLIENT_ID TASKS START_AT_MS
//       opens the store, waits until START_AT_MS (ms since 1970), then runs TASKS concurrent
//       validCredentials(session:) calls that refresh through OAuthClient; prints
//       "ok TASKS DISTINCT" where DISTINCT is how many different access tokens the tasks got.
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
