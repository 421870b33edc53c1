import CredentialVault
import Foundation
import VaultCrypto
import OAuthServerSupport
import Testing
import TestScheduling

/// `vault signin --browser` against the real django-oauth-toolkit server: scripts/test-browser,
/// set as $BROWSER, logs in through the server's own login and consent pages and follows its
/// redirect to vault's loopback listener; its switches make the misbehaviours.
@Suite("vault signin --browser against the real server", .blockingWork, .enabled(if: OAuthServer.shouldRun))
struct BrowserSignInCLITests {
    /// What the browser saw at vault's listener: one entry per request.
    struct Visit: Decodable {
        let what: String
        let status: Int
        let page: String
    }

    func signIn(_ folder: SessionFolder, browser modes: String, extra: [String] = [], wait: String = "60s",
                clientID: String? = nil) throws -> (VaultRun, [Visit]) {
        let server = try OAuthServer.require()
        let log = folder.path + "/browser-\(UUID().uuidString).log"
        let run = try vault(["signin", "--browser", "--issuer", try server.issuer.absoluteString,
                             "--client-id", try clientID ?? server.string("browser_client_id"),
                             "--scope", "read", "--wait", wait, "--json"] + extra,
                            folder: folder,
                            environment: ["BROWSER": OAuthServer.repositoryRoot + "/scripts/test-browser", "VAULT_OAUTH_SERVER": server.directory,
                                          "VAULT_TEST_BROWSER": modes, "VAULT_TEST_BROWSER_LOG": log])
        // The browser is detached: its last request may land just after vault exits.
        var visits: [Visit] = []
        for _ in 0..<50 {
            let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
            visits = lines.compactMap { try? JSONDecoder().decode(Visit.self, from: Data($0.utf8)) }
            if visits.contains(where: { $0.what == "callback" }) || modes.contains("nothing") { break }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return (run, visits)
    }

    func state(_ folder: SessionFolder) throws -> String {
        let status = try vault(["status", "--json"], folder: folder)
        guard case .object(let members) = try JSONValue(parsing: Array(status.stdout)) else { return "?" }
        return members["state"]?.stringValue ?? "?"
    }

    @Test("signs in through the login and consent pages: PKCE, the verified ID token's user, guest items migrate; wrong state gets 400, other paths 404")
    func signsIn() throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        _ = try vault(["guest"], folder: folder)
        #expect(try vault(["add", "draft", "--guest"], folder: folder, input: Data("guest-draft".utf8)).status == 0)
        let started = ContinuousClock.now
        let (run, visits) = try signIn(folder, browser: "probe")
        let took = ContinuousClock.now - started
        print("one browser sign-in end to end on loopback (vault start to exit, login and consent included): \(took)")
        #expect(run.status == 0, "\(run.stderr)")
        guard case .object(let report) = try JSONValue(parsing: Array(run.stdout)) else {
            Issue.record("not JSON: \(run.stderr)")
            return
        }
        #expect(report["userId"]?.stringValue == (try server.userID))
        #expect(report["moved"] == .array([.string("draft")]))
        #expect(run.stderr.contains("http://127.0.0.1:\(server.facts["port"]?.intValue ?? 0)/o/authorize/?response_type=code"))
        #expect(run.stderr.contains("code_challenge_method=S256"))
        #expect(visits.map(\.what) == ["open", "favicon", "wrong-state", "no-state", "callback"])
        #expect(visits.map(\.status) == [0, 404, 400, 400, 200])
        // The browser was started with the loopback address only: no state, nonce or challenge in its arguments.
        let opened = try #require(visits.first?.page)
        #expect(opened.hasPrefix("http://127.0.0.1:") && opened.hasSuffix("/signin"), "\(opened)")
        #expect(run.stderr.contains(opened))
        #expect(visits.last?.page.contains("Signed in") == true)
        #expect(visits.allSatisfy { !$0.page.contains("code=") && !$0.page.contains("access_token") })
        #expect(try state(folder) == "needsOnboarding")
        // The client configuration was stored: the session refreshes without the command line's options.
        let token = try vault(["refresh"], folder: folder)
        #expect(token.status == 0, "\(token.stderr)")
    }

    @Test("the real server misbehaving (scripts/oauth-server's misbehave.py): each refused ID token exits 76, stores nothing, names the check",
          arguments: [("expired", "expired at"), ("audience", "audience (aud)"), ("issuer", "issuer (iss)"),
                       ("nonce", "nonce is not the one"), ("signature", "signature does not verify"),
                       ("kid", "no key with key id 'rotated-away'")])
    func refusedIDToken(mode: String, words: String) throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        _ = try vault(["guest"], folder: folder)
        let (run, visits) = try signIn(folder, browser: "", clientID: "vault-misbehave-\(mode)")
        #expect(run.status == 76, "\(mode): \(run.stderr)")
        #expect(run.stderr.contains(words), "\(mode): \(run.stderr)")
        #expect(visits.last?.page.contains("did not complete") == true)
        #expect(try state(folder) == "guest")
    }

    @Test("the real server's refresh answer misbehaving (misbehave.py, vault-misbehave-refresh-<mode>): 'vault refresh' and 'vault token' refuse its ID token with 76 and keep the old tokens",
          arguments: [("signature", "signature does not verify"), ("none", "algorithm 'none' is not accepted"),
                       ("hs256", "algorithm 'HS256' is not accepted"), ("kid", "no key with key id 'rotated-away'"),
                       ("expired", "expired at"), ("issuer", "issuer (iss)"), ("audience", "audience (aud)")])
    func refusedRefreshIDToken(mode: String, words: String) async throws {
        // Each command in a session of its own: the server rotated the refresh token when it
        // answered, so after a refused answer the kept one is dead there (reuse protection).
        for command in [["refresh"], ["token", "--min-ttl", "30m"]] {
            let folder = try SessionFolder()
            defer { folder.cleanUp() }
            _ = try vault(["init"], folder: folder)
            let (run, _) = try signIn(folder, browser: "", clientID: "vault-misbehave-refresh-\(mode)")
            #expect(run.status == 0, "\(mode): the first grant is sound: \(run.stderr)")
            let stored = { try await folder.session(leeway: .seconds(-86_400)).restore().credentials }
            let before = try #require(try await stored())
            let refused = try vault(command, folder: folder)
            #expect(refused.status == 76, "\(mode), \(command[0]): \(refused.stderr)")
            #expect(refused.stderr.contains(words), "\(mode), \(command[0]): \(refused.stderr)")
            #expect(refused.stdout.isEmpty)
            let after = try #require(try await stored())
            #expect(after.accessToken == before.accessToken && after.refreshToken == before.refreshToken
                    && after.idToken == before.idToken, "\(mode), \(command[0]): the old tokens are kept")
            #expect(try state(folder) != "guest")
        }
    }

    /// `folder` initialised with the browser client stored with `--dpop`.
    func dpopClientStored(_ folder: SessionFolder) throws {
        let server = try OAuthServer.require()
        _ = try vault(["init"], folder: folder)
        let client = try vault(["client", "--issuer", try server.issuer.absoluteString, "--client-id", try server.string("browser_client_id"),
                                "--dpop"], folder: folder)
        #expect(client.status == 0, "\(client.stderr)")
    }

    /// The sealed DPoP key of `folder`'s vault, nil when there is none.
    func dpopKey(_ folder: SessionFolder) throws -> SecureBytes? {
        try? folder.store().snapshot { try $0.secret(named: StoredClientConfiguration.dpopKeyEntry, owner: "") }
    }

    @Test("a sign-in keeps the stored client's DPoP setting and key; --no-dpop turns it off and removes the key")
    func signInKeepsDPoP() async throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        try dpopClientStored(folder)
        let dpopKey = { try self.dpopKey(folder) }
        let storedClient = { try await StoredClientConfiguration.load(from: try folder.store()) }
        let key = try #require(try dpopKey())
        let (run, _) = try signIn(folder, browser: "")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(try await storedClient()?.dpop == true, "signing in without --dpop keeps DPoP on")
        #expect(try dpopKey() == key, "and keeps the sealed key (tokens bound to it go on refreshing)")
        #expect(try vault(["signout"], folder: folder).status == 0)
        let (off, _) = try signIn(folder, browser: "", extra: ["--no-dpop"])
        #expect(off.status == 0, "\(off.stderr)")
        #expect(try await storedClient()?.dpop == false)
        #expect(try dpopKey() == nil, "--no-dpop removes the key")
        let both = try vault(["signin", "--browser", "--issuer", "https://a.example", "--client-id", "c", "--dpop", "--no-dpop"], folder: folder)
        #expect(both.status == 64)
    }

    @Test("a sealed DPoP key that cannot be used stops the sign-in (65) and is never replaced silently; --no-dpop removes it")
    func anUnusableDPoPKeyStopsTheSignIn() async throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        try dpopClientStored(folder)
        let broken = SecureBytes(copying: Array(repeating: 0xFF, count: 32))   // not a P-256 key (its raw form is 96 bytes)
        try folder.store().update { transaction in
            _ = try transaction.put(NewEntry(name: StoredClientConfiguration.dpopKeyEntry, secret: broken, transferable: false), replace: true)
        }
        let dpopKey = { try self.dpopKey(folder) }
        let (run, visits) = try signIn(folder, browser: "")
        #expect(run.status == 65, "\(run.stderr)")
        #expect(run.stderr.contains("DPoP key"), "\(run.stderr)")
        #expect(visits.isEmpty, "nothing was started")
        #expect(try dpopKey() == broken, "the sealed key is kept as it was")
        #expect(try await StoredClientConfiguration.load(from: try folder.store())?.dpop == true)
        let (off, _) = try signIn(folder, browser: "", extra: ["--no-dpop"])
        #expect(off.status == 0, "\(off.stderr)")
        #expect(try dpopKey() == nil)
    }

    @Test("the user presses Cancel: access_denied exits 76, the guest stays guest")
    func denied() throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        _ = try vault(["guest"], folder: folder)
        let (run, visits) = try signIn(folder, browser: "deny")
        #expect(run.status == 76, "\(run.stderr)")
        #expect(run.stderr.contains("access_denied"))
        #expect(visits.last?.status == 400)
        #expect(visits.last?.page.contains("did not complete") == true)
        #expect(try state(folder) == "guest")
    }

    @Test("an iss that is not the issuer (RFC 9207 mix-up) exits 76 and stores nothing")
    func wrongIssuer() throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        _ = try vault(["guest"], folder: folder)
        let (run, _) = try signIn(folder, browser: "inject-iss")
        #expect(run.status == 76, "\(run.stderr)")
        #expect(run.stderr.contains("RFC 9207"))
        #expect(try state(folder) == "guest")
    }

    @Test("a replayed authorization code is refused by the server (invalid_grant): exit 76, nothing stored")
    func replayedCode() throws {
        let first = try SessionFolder()
        defer { first.cleanUp() }
        _ = try vault(["init"], folder: first)
        let codeFile = first.path + "/code"
        let (firstRun, _) = try signIn(first, browser: "save-code=\(codeFile)")
        #expect(firstRun.status == 0, "\(firstRun.stderr)")
        let second = try SessionFolder()
        defer { second.cleanUp() }
        _ = try vault(["init"], folder: second)
        _ = try vault(["guest"], folder: second)
        let (run, _) = try signIn(second, browser: "replay-code=\(codeFile)")
        #expect(run.status == 76, "\(run.stderr)")
        #expect(run.stderr.contains("invalid_grant"))
        #expect(try state(second) == "guest")
    }

    @Test("no callback within --wait exits 75; --no-open starts no browser")
    func noCallback() throws {
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        _ = try vault(["guest"], folder: folder)
        let (run, visits) = try signIn(folder, browser: "", extra: ["--no-open"], wait: "2s")
        #expect(run.status == 75, "\(run.stderr)")
        #expect(run.stderr.contains("/o/authorize/?"))
        #expect(visits.isEmpty)
        #expect(try state(folder) == "guest")
    }

    @Test("a browser that cannot be started is a warning: the address is printed and vault waits")
    func browserMissing() throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        let run = try vault(["signin", "--browser", "--issuer", try server.issuer.absoluteString, "--client-id",
                             try server.string("browser_client_id"), "--wait", "2s"], folder: folder,
                            environment: ["BROWSER": folder.path + "/no-such-browser"])
        #expect(run.status == 75, "\(run.stderr)")
        #expect(run.stderr.contains("/o/authorize/?"))
        #expect(run.stderr.contains("warning: could not start a browser"))
    }

    @Test("a --redirect-port that cannot be bound exits 71")
    func portInUse() throws {
        let server = try OAuthServer.require()
        let folder = try SessionFolder()
        defer { folder.cleanUp() }
        _ = try vault(["init"], folder: folder)
        // The authorization server's own port is taken.
        let (run, _) = try signIn(folder, browser: "nothing", extra: ["--redirect-port", "\(server.facts["port"]?.intValue ?? 0)"], wait: "2s")
        #expect(run.status == 71, "\(run.stderr)")
        #expect(run.stderr.contains("cannot listen on 127.0.0.1"))
    }
}
