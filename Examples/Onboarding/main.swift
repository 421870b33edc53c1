// Flow 5: a UserState enum with onboarding. The app's UI switches on its own small state
// type, built from SessionState and kept current by the session's update stream. A user who
// finished onboarding and signed out keeping their local data never sees it again on this
// device; a sign-out that wipes their data wipes the onboarding answers with it.
import CredentialVault
import ExampleSupport

/// What the app's UI switches on.
enum UserState: Equatable {
    case anonymous
    case onboarding(userID: String)
    case ready(userID: String)
    case signInAgain(userID: String)
    case problem(String)

    init(_ state: SessionState) {
        switch state {
        case .guest: self = .anonymous
        case let .needsOnboarding(user, _): self = .onboarding(userID: user.id)
        case let .signedIn(user, _): self = .ready(userID: user.id)
        case let .expired(user, _, _): self = .signInAgain(userID: user.id)
        case let .unavailable(reason): self = .problem("\(reason)")
        }
    }
}

/// Keeps the UI's state in step with the session.
actor Screen {
    private(set) var shown: [UserState] = []
    func show(_ state: UserState) { shown.append(state) }
}

let app = try ExampleApp(name: "onboarding")
let session = app.launch()
let screen = Screen()
let updates = await session.updates()
let follower = Task { for await state in updates { await screen.show(UserState(state)) } }

_ = await session.restore()
try await session.signIn(user: User(id: "barbara"), credentials: FakeAuthorizationServer.signIn(user: "barbara"))
try await session.completeOnboarding()
try await session.signOut(localData: .keep)       // her data, onboarding answers included, stays
try await session.signIn(user: User(id: "barbara"), credentials: FakeAuthorizationServer.signIn(user: "barbara"))
try await session.signOut()                       // the default wipes her data, and onboarding with it
try await session.signIn(user: User(id: "barbara"), credentials: FakeAuthorizationServer.signIn(user: "barbara"))

let expected: [UserState] = [.anonymous, .onboarding(userID: "barbara"), .ready(userID: "barbara"), .anonymous,
                             .ready(userID: "barbara"), .anonymous, .onboarding(userID: "barbara")]
for _ in 0..<200 where await screen.shown.count < expected.count { try await Task.sleep(for: .milliseconds(10)) }
follower.cancel()
Outcome.expect(await screen.shown == expected, "the UI followed: \(await screen.shown)")
Outcome.finish(removing: app)
