// A worker process for the OAuth tests against the real server (Tests/CredentialVaultOAuthTests):
// it refreshes a session through OAuthClient from another process.
//
//   VaultOAuthTestWorker refresh DIR KEY_FILE TOKEN_ENDPOINT CLIENT_ID TASKS START_AT_MS
//       waits until START_AT_MS (ms since 1970), then runs TASKS concurrent
//       validCredentials(client:) calls; prints "ok TASKS DISTINCT" where DISTINCT is how
//       many different access tokens the tasks got (1 when single-flight held).
//   VaultOAuthTestWorker refresh-once DIR KEY_FILE TOKEN_ENDPOINT CLIENT_ID 1 0
//       one forced refresh; prints "begin" before and "ok" after (the SIGKILL test).
//
// VAULT_OAUTH_CLIENT_SECRET_FILE, when set, names the confidential client's secret.
// Never prints a token.
import CredentialVault
import CredentialVaultOAuth
import Foundation
import VaultCrypto

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count == 8, let tasks = Int(arguments[6]), let startAt = Double(arguments[7]),
      let tokenEndpoint = URL(string: arguments[4]) else {
    fail("usage: VaultOAuthTestWorker refresh|refresh-once DIR KEY_FILE TOKEN_ENDPOINT CLIENT_ID TASKS START_AT_MS")
}
let (command, directory, keyFile, clientID) = (arguments[1], arguments[2], arguments[3], arguments[5])

do {
    let session = SessionManager(directory: directory, key: try VaultKey.fromKeyFile(path: keyFile),
                                 configuration: SessionConfiguration(leeway: .zero, lockTimeout: .seconds(60)))
    // A confidential client when VAULT_OAUTH_CLIENT_SECRET_FILE names its secret, else public.
    var authentication = ClientAuthentication.none
    if let path = ProcessInfo.processInfo.environment["VAULT_OAUTH_CLIENT_SECRET_FILE"] {
        let text = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        authentication = .clientSecretBasic(SecureBytes(copying: Array(text.utf8)))
    }
    let client = try OAuthClient(configuration: OAuthConfiguration(
        issuer: nil, endpoints: OAuthEndpoints(token: tokenEndpoint), clientID: clientID,
        authentication: authentication, retry: .never))
    switch command {
    case "refresh":
        let wait = startAt / 1000 - Date().timeIntervalSince1970
        if wait > 0 { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
        let tokens = try await withThrowingTaskGroup(of: SecureBytes.self) { group in
            for _ in 0..<tasks { group.addTask { try await session.validCredentials(client: client).accessToken } }
            var all: [SecureBytes] = []
            for try await token in group { all.append(token) }
            return all
        }
        var distinct: [SecureBytes] = []
        for token in tokens where !distinct.contains(token) { distinct.append(token) }
        say("ok \(tokens.count) \(distinct.count)")
    case "refresh-once":
        say("begin")
        _ = try await session.refreshNow(client: client)
        say("ok")
    default:
        fail("unknown command \(command)")
    }
    try await client.shutdown()
} catch {
    fail("error: \(error)")
}
