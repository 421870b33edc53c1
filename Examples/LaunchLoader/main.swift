// Flow 4: load the user at launch with silent token validation. At start-up the app asks
// restore() who is using it. A signed-in user whose access token expired is refreshed in the
// background without a login screen; only when that fails does the app show the login.
import CredentialVault
import ExampleSupport

let app = try ExampleApp(name: "launch")

// Yesterday: the user signed in with a token that lives 2 seconds.
let yesterday = app.launch()
_ = await yesterday.restore()
try await yesterday.signIn(user: User(id: "alan", onboardingComplete: true),
                           credentials: FakeAuthorizationServer.signIn(user: "alan", lifetime: 2))
try await Task.sleep(for: .seconds(2.2))

// Today's launch.
let session = app.launch()
let refreshes = RefreshCounter()
var screen = "splash"
switch await session.restore() {
case .signedIn:
    screen = "home"
case let .expired(user, canRefresh, _) where canRefresh:
    // Silent sign-in: refresh in the background, keep the splash screen meanwhile.
    do {
        _ = try await session.validCredentials(refresher: FakeAuthorizationServer.refresher(counter: refreshes))
        screen = "home (\(user.id), refreshed silently)"
    } catch {
        screen = "login"
    }
case .expired, .guest:
    screen = "login"
case .needsOnboarding:
    screen = "onboarding"
case let .unavailable(reason):
    // Locked, corrupt or unreadable is never "signed out": say what is wrong.
    screen = "error: \(reason)"
}
Outcome.expect(screen == "home (alan, refreshed silently)", "the expired session was refreshed without a login screen")
Outcome.expect(refreshes.count == 1, "exactly one refresh")
Outcome.expect(await session.hasValidCredentials(minTTL: .seconds(600)), "the new token is valid for the next 10 minutes")

// A second relaunch finds the refreshed token and goes straight home, without refreshing.
guard case .signedIn = await app.launch().restore() else { fatalError("the refreshed token was not saved") }
Outcome.expect(refreshes.count == 1, "no refresh on the next launch")
Outcome.finish(removing: app)
