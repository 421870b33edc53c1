// The launch call and device sign-in with the library's real OAuth client (CredentialVaultOAuth),
// against a real authorization server: docs/SESSIONS.md, "An app with the library's OAuth client".
//
// 1. Launch: `credentials(minTTL:client:)` says a sign-in is required (a new install is a guest).
// 2. Sign in in one call: `signIn(using: .device { … })` shows the code (here: printed; the test
//    plays the user and approves it at the server), polls, learns the user id from the server,
//    and moves the guest's draft to the account.
// 3. Next launch: the same call gives the stored token without a sign-in.
// 4. Sign out: wiped locally, revoked at the server, back to guest; the launch call asks for a
//    sign-in again.
//
// The server is named by $VAULT_OAUTH_SERVER (the folder scripts/oauth-server started).
import CredentialVault
import CredentialVaultOAuth
import ExampleSupport
import Foundation

/// What scripts/oauth-server wrote about the server it started.
struct ServerFacts {
    let issuer: URL
    let deviceEndpoint: URL
    let clientID: String

    init(folder: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: folder).appendingPathComponent("server.json"))
        guard let facts = try JSONSerialization.jsonObject(with: data) as? [String: Any],
              let issuer = (facts["issuer"] as? String).flatMap(URL.init(string:)),
              let device = (facts["device_authorization_endpoint"] as? String).flatMap(URL.init(string:)),
              let clientID = facts["device_client_id"] as? String else {
            throw ExampleFailure("server.json lacks issuer, device_authorization_endpoint or device_client_id")
        }
        (self.issuer, self.deviceEndpoint, self.clientID) = (issuer, device, clientID)
    }
}

struct ExampleFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

guard let folder = ProcessInfo.processInfo.environment["VAULT_OAUTH_SERVER"] else {
    throw ExampleFailure("set VAULT_OAUTH_SERVER to the folder of a server started by scripts/oauth-server")
}
let facts = try ServerFacts(folder: folder)
let app = try ExampleApp(name: "oauth-sign-in")
// One client for the life of the app (a public client: the device grant needs no secret).
let oauth = try OAuthClient(configuration: OAuthConfiguration(
    issuer: facts.issuer, endpoints: OAuthEndpoints(deviceAuthorization: facts.deviceEndpoint),
    clientID: facts.clientID, scopes: ["openid", "read"]))

// 1. A new install: the launch call asks for a sign-in.
let session = app.launch()
do {
    _ = try await session.credentials(minTTL: .seconds(5), client: oauth)
    Outcome.expect(false, "a new install has no credentials")
} catch SessionCredentialsError.signInRequired(let returning) {
    Outcome.expect(returning == nil, "a guest: the launch call asks for a sign-in, with nobody to prefill")
}
try await session.saveItem(string: "half-written review", named: "draft")

// 2. Sign in in one call; the app shows the code (the test approves it, as the user would).
let result = try await session.signIn(using: .device { authorization in
    // Written unbuffered: the user (here, the test) must see the code while the example polls.
    FileHandle.standardOutput.write(Data("To sign in, open \(authorization.verificationURI) and enter the code \(authorization.userCode)\n".utf8))
}, client: oauth)
Outcome.expect(!result.user.id.isEmpty, "signed in as the server's subject \(result.user.id)")
Outcome.expect(result.migration.moved == ["draft"], "the guest's draft moved to the account")

// 3. The next launch: the same call, no sign-in.
let relaunched = app.launch()
let credentials = try await relaunched.credentials(minTTL: .seconds(5), client: oauth)
Outcome.expect(!credentials.accessToken.isEmpty, "the next launch gets the stored token without a sign-in")
Outcome.expect(try await relaunched.itemString(named: "draft") == "half-written review", "the draft is the user's now")

// 4. Sign out: revoked at the server, back to guest.
let report = try await relaunched.signOut(revokingWith: oauth)
Outcome.expect(report.succeeded, "signed out and revoked at the server: \(report)")
do {
    _ = try await relaunched.credentials(client: oauth)
    Outcome.expect(false, "signed out: no credentials")
} catch SessionCredentialsError.signInRequired {
    Outcome.expect(true, "after sign-out the launch call asks for a sign-in again")
}
try await oauth.shutdown()
Outcome.finish(removing: app)
