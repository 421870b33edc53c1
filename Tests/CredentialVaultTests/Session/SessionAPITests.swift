import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

/// Collects the states an `updates()` stream yields.
final class StateRecorder: @unchecked Sendable {
    // Safe: `states` is only touched under `lock`.
    private let lock = NSLock()
    private var states: [String] = []
    func append(_ state: SessionState) { lock.lock(); states.append(state.name + (state.user.map { ":\($0.id)" } ?? "")); lock.unlock() }
    var names: [String] { lock.lock(); defer { lock.unlock() }; return states }
}

/// Polls `condition` every 10 ms for at most `seconds`.
func eventually(within seconds: Double = 5, _ condition: @Sendable () async -> Bool) async -> Bool {
    for _ in 0..<Int(seconds * 100) {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}

@Suite struct RequireSignInTests {
    @Test func waitersContinueWithTheUserOnceSignInCompletes() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        _ = await session.restore()
        let shown = CallCounter()
        let waiters = (0..<3).map { _ in
            Task { try await session.requireSignIn { shown.increment() } }
        }
        #expect(await eventually { await session.pendingSignInRequests == 3 })
        #expect(shown.count == 3)
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        for waiter in waiters { #expect(try await waiter.value.id == "u1") }
        #expect(await session.pendingSignInRequests == 0)
    }

    @Test func signedInUserIsReturnedAtOnceWithoutPresentingALogin() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        let shown = CallCounter()
        #expect(try await session.requireSignIn { shown.increment() }.id == "u1")
        #expect(shown.count == 0)
    }

    @Test func declinedLoginThrowsForEveryWaiter() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        let waiters = (0..<2).map { _ in Task { try await session.requireSignIn() } }
        #expect(await eventually { await session.pendingSignInRequests == 2 })
        await session.cancelSignInRequests()
        for waiter in waiters {
            await #expect { try await waiter.value } throws: { ($0 as? VaultError)?.code == .signInCancelled }
        }
    }

    @Test func cancellingTheWaitingTaskThrowsCancellationForThatWaiterOnly() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        let cancelled = Task { try await session.requireSignIn() }
        let kept = Task { try await session.requireSignIn() }
        #expect(await eventually { await session.pendingSignInRequests == 2 })
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(await eventually { await session.pendingSignInRequests == 1 })
        try await session.signIn(user: User(id: "u2"), credentials: fixture.credentials(expiresIn: 3600))
        #expect(try await kept.value.id == "u2")
    }
}

@Suite struct SessionUpdatesTests {
    @Test func transitionsArePublishedInOrder() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        let recorder = StateRecorder()
        let stream = await session.updates()
        let reader = Task { for await state in stream { recorder.append(state) } }
        defer { reader.cancel() }
        _ = await session.restore()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        try await session.completeOnboarding()
        _ = try await session.validCredentials(minTTL: .zero) { _ in throw TestFailure("no refresh needed") }
        fixture.clock.advance(by: 3600)
        _ = try await session.validCredentials { _ in
            Credentials(accessToken: secret("access-2"), expiresAt: fixture.clock.now.addingTimeInterval(3600))
        }
        try await session.signOut()
        let expected = ["guest", "needsOnboarding:u1", "signedIn:u1", "signedIn:u1", "guest"]
        #expect(await eventually { recorder.names == expected }, "\(recorder.names)")
    }

    @Test func aChangeByAnotherProcessIsPublishedOnTheNextRead() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let app = try fixture.session()
        let other = try fixture.session()   // stands for `vault signout` in a terminal
        try await app.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        _ = await app.restore()
        let recorder = StateRecorder()
        let stream = await app.updates()
        let reader = Task { for await state in stream { recorder.append(state) } }
        defer { reader.cancel() }
        try await other.signOut()
        // A late subscriber gets the present state first (issue 26, convenience 9), then the change.
        #expect(await eventually { recorder.names == ["signedIn:u1"] }, "\(recorder.names)")
        _ = try await app.items()
        #expect(await eventually { recorder.names == ["signedIn:u1", "guest"] }, "\(recorder.names)")
    }

    /// Issue 26, convenience 9: a late subscriber gets the present value first; every subscriber
    /// gets every change; `currentUser`; `SessionState` is `Equatable`.
    @Test func lateAndManySubscribersEachGetEveryChange() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        let empty = StateRecorder()
        let early = await session.updates()
        let emptyReader = Task { for await state in early { empty.append(state) } }
        defer { emptyReader.cancel() }
        try? await Task.sleep(for: .milliseconds(50))
        #expect(empty.names.isEmpty, "before the first restore() there is nothing to give")
        _ = await session.restore()
        #expect(await session.currentUser == nil)
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        #expect(await session.currentUser?.id == "u1")
        let first = StateRecorder(), second = StateRecorder()
        let streams = [await session.updates(), await session.updates()]
        let readers = [Task { for await state in streams[0] { first.append(state) } },
                       Task { for await state in streams[1] { second.append(state) } }]
        defer { for reader in readers { reader.cancel() } }
        try await session.signOut()
        for recorder in [first, second] {
            #expect(await eventually { recorder.names == ["signedIn:u1", "guest"] }, "\(recorder.names)")
        }
        #expect(await eventually { empty.names == ["guest", "signedIn:u1", "guest"] }, "\(empty.names)")
    }

    @Test func sessionStatesCompareByValueAndUnavailableByReason() {
        let token = Credentials(accessToken: secret("a"), expiresAt: Date(timeIntervalSince1970: 1))
        let user = User(id: "u1")
        #expect(SessionState.signedIn(user, token) == .signedIn(user, token))
        #expect(SessionState.signedIn(user, token) != .signedIn(user, Credentials(accessToken: secret("b"), expiresAt: Date(timeIntervalSince1970: 1))))
        #expect(SessionState.signedIn(user, token) != .needsOnboarding(user, token))
        #expect(SessionState.guest(anonymousID: "x") == .guest(anonymousID: "x"))
        #expect(SessionState.unavailable(SessionUnavailable(reason: .corrupt, error: VaultError(.corrupt, "one")))
                == .unavailable(SessionUnavailable(reason: .corrupt, error: VaultError(.tampered, "another"))))
        #expect(SessionState.unavailable(SessionUnavailable(reason: .corrupt, error: nil)) != .unavailable(SessionUnavailable(reason: .busy, error: nil)))
    }
}

@Suite struct SessionSettingsTests {
    @Test func registeredDefaultsApplyUntilSetAndComeBackInGuestMode() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        await session.registerDefaults(["serverURL": "https://api.example.com", "theme": "light", "volume": 7])
        #expect(try await session.string(forKey: "serverURL") == "https://api.example.com")
        #expect(try await session.integer(forKey: "volume") == 7)
        #expect(try await session.bool(forKey: "missing") == nil)
        try await session.set("dark", forKey: "theme")
        try await session.set(true, forKey: "notifications")
        try await session.set(0.5, forKey: "ratio")
        #expect(try await session.string(forKey: "theme") == "dark")
        #expect(try await session.bool(forKey: "notifications") == true)
        #expect(try await session.double(forKey: "ratio") == 0.5)
        // Another manager (a new launch) reads what was stored, not this one's defaults.
        #expect(try await fixture.session().string(forKey: "theme") == "dark")
        _ = try await session.enterGuestMode()
        #expect(try await session.string(forKey: "theme") == "light")
        #expect(try await session.bool(forKey: "notifications") == nil)
        #expect(try await session.allSettings() == ["serverURL": "https://api.example.com", "theme": "light", "volume": 7])
    }

    @Test func settingNilFallsBackToTheDefault() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        await session.registerDefaults(["theme": "light"])
        try await session.set("dark", forKey: "theme")
        try await session.setSetting(nil, forKey: "theme")
        #expect(try await session.string(forKey: "theme") == "light")
    }
}

@Suite struct LocalDataPolicyTests {
    @Test func keptItemsWaitForTheReturningUserAndTheGuestsItemsMergeIn() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        try await session.saveItem(string: "fav:1", named: "favourites")
        try await session.saveItem(string: "song.mp3", named: "download")
        try await session.completeOnboarding()
        try await session.signOut(localData: .keep)
        // Credentials are gone, items are not; a restart does not shred them as orphans.
        #expect(try fixture.store().list(owner: "user:u1").map(\.name) == ["download", "favourites"])
        _ = await (try fixture.session()).restore()
        #expect(try fixture.store().list(owner: "user:u1").map(\.name) == ["download", "favourites"])
        // In between, a guest adds a favourite of their own.
        try await session.saveItem(string: "fav:2", named: "favourites")
        let report = try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600),
                                              policy: .custom { guest, account in
            let merged = account.value.withUnsafeBytes { Array($0) } + Array(",".utf8) + guest.value.withUnsafeBytes { Array($0) }
            return .merged(SecureBytes(copying: merged))
        })
        #expect(report.conflicts == [.init(name: "favourites", resolution: .merged)])
        #expect(try await session.itemString(named: "favourites") == "fav:1,fav:2")
        #expect(try await session.itemString(named: "download") == "song.mp3")
        #expect(try await session.guestItems().isEmpty)
        // Onboarding was remembered for this user across the sign-out.
        guard case .signedIn = await session.restore() else {
            Issue.record("a returning user who finished onboarding is asked again")
            return
        }
    }

    @Test func wipeRemovesTheUsersItemsWithTheCredentials() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        try await session.saveItem(string: "fav:1", named: "favourites")
        try await session.completeOnboarding()
        try await session.signOut(localData: .wipe)
        #expect(try fixture.store().list(owner: "user:u1").isEmpty)
        // The onboarding answers went with the items: the returning user is onboarded again.
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        guard case .needsOnboarding = await session.restore() else {
            Issue.record("a user whose local data was wiped comes back as onboarded")
            return
        }
    }

    @Test func aReplacedGuestsItemsAreRemovedNotOrphaned() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        _ = await session.restore()
        let oldGuest = try #require(await session.anonymousID)
        try await session.saveItem(NewEntry(name: "coins", secret: secret("150"), transferable: false))
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        #expect(try await session.guestItems().map(\.name) == ["coins"])
        try await session.signOut(newAnonymousID: true)
        let newGuest = try #require(await session.anonymousID)
        #expect(newGuest != oldGuest)
        #expect(try fixture.store().list(owner: SessionNamespaces.guest(oldGuest)).isEmpty)
        #expect(try fixture.store().snapshot { $0.owners }.allSatisfy { !$0.contains(oldGuest) })
    }
}

@Suite struct SessionConvenienceTests {
    @Test func hasValidCredentialsAndCanRefreshNeedNoRestore() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        #expect(await session.hasValidCredentials() == false)
        #expect(await session.canRefresh == false)
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        let fresh = try fixture.session()
        #expect(await fresh.hasValidCredentials(minTTL: .seconds(600)))
        #expect(await fresh.hasValidCredentials(minTTL: .seconds(7200)) == false)
        #expect(await fresh.canRefresh)
    }

    @Test func renewRefreshesAValidToken() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        let counter = CallCounter()
        let renewed = try await session.renew { _ in
            counter.increment()
            return Credentials(accessToken: secret("access-2"), expiresAt: fixture.clock.now.addingTimeInterval(3600))
        }
        #expect(counter.count == 1)
        #expect(renewed.accessToken == secret("access-2"))
        #expect(renewed.refreshToken == secret("refresh-1"))
    }

    @Test func aMinTTLLongerThanTheTokensLifeIsItsOwnError() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 60))
        let counter = CallCounter()
        let refresher: TokenRefresher = { _ in
            counter.increment()
            return Credentials(accessToken: secret("access-2"), expiresAt: fixture.clock.now.addingTimeInterval(3600),
                               issuedAt: fixture.clock.now)
        }
        await #expect { try await session.validCredentials(minTTL: .seconds(7200), refresher: refresher) }
            throws: { ($0 as? VaultError)?.code == .minTTLTooLarge }
        #expect(counter.count == 1)
    }

    @Test func aShortLivedTokenIsUsableWhenIssuedAndRefreshesOnce() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()   // default 60 s leeway
        let now = fixture.clock.now
        let short = Credentials(accessToken: secret("access-1"), refreshToken: secret("refresh-1"),
                                expiresAt: now.addingTimeInterval(5), issuedAt: now)
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: short)
        guard case .signedIn = await session.restore() else {
            Issue.record("a 5-second token is born expired")
            return
        }
        let counter = CallCounter()
        let refresher: TokenRefresher = { _ in
            counter.increment()
            let issued = fixture.clock.now
            return Credentials(accessToken: secret("access-\(counter.count + 1)"), expiresAt: issued.addingTimeInterval(5),
                               issuedAt: issued)
        }
        fixture.clock.advance(by: 3)   // past half its life: expired by the capped leeway
        for _ in 0..<3 { _ = try await session.validCredentials(refresher: refresher) }
        #expect(counter.count == 1)
    }

    @Test func removeItemAndTextConveniences() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.saveItem(string: "héllo", named: "greeting")
        #expect(try await session.itemString(named: "greeting") == "héllo")
        #expect(try await session.itemString(named: "absent") == nil)
        try await session.saveItem(NewEntry(name: "binary", secret: SecureBytes(copying: [0xFF, 0xFE])))
        await #expect { try await session.itemString(named: "binary") } throws: { ($0 as? VaultError)?.code == .invalidInput }
        try await session.removeItem(named: "greeting")
        #expect(try await session.items().map(\.name) == ["binary"])
        await #expect { try await session.removeItem(named: "greeting") } throws: { ($0 as? VaultError)?.code == .notFound }
        await #expect { try await session.removeItem(named: "session.access-token") } throws: {
            ($0 as? VaultError)?.code == .invalidInput
        }
    }

    @Test func wipeAllLeavesANewInstall() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        _ = await session.restore()
        let before = try #require(await session.anonymousID)
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        try await session.wipeAll()
        #expect(!FileManager.default.fileExists(atPath: fixture.directory + "/secrets.vault"))
        #expect(!FileManager.default.fileExists(atPath: fixture.directory + "/profile.json"))
        let reopened = try fixture.session()
        guard case let .guest(after) = await reopened.restore() else {
            Issue.record("not a guest after wiping everything")
            return
        }
        #expect(after != before)
    }
}

/// An unlock (scrypt) runs off Swift's cooperative pool, so the app's other tasks keep
/// running meanwhile. Measured in a worker process of its own (the test runner's parallel
/// tests would otherwise share the pool being measured).
@Suite(.blockingWork) struct CooperativePoolTests {
    @Test func aConcurrentTaskKeepsTickingDuringUnlocks() throws {
        let temp = try TemporaryDirectory("vault-pool")
        defer { temp.cleanUp() }
        // Twice as many unlocks (logN 17, a few hundred ms each) as the pool has threads.
        let unlocks = ProcessInfo.processInfo.activeProcessorCount * 2
        let worker = Process()
        worker.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: "VaultTestWorker"))
        worker.arguments = ["pool-ticks", temp.child("vault"), "-", "-", "\(unlocks)"]
        let output = Pipe()
        worker.standardOutput = output
        try worker.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        worker.waitUntilExit()
        #expect(worker.terminationStatus == 0)
        let numbers = text.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        try #require(numbers.count == 2, "worker said: \(text)")
        print("cooperative pool: \(unlocks) unlocks; the ticker ran \(numbers[0]) of \(numbers[1]) possible times")
        // On the pool, scrypt holds every pool thread and the ticker hardly runs (measured: 116 of 860).
        #expect(numbers[0] >= numbers[1] / 4, "the ticker starved: \(text)")
    }
}
