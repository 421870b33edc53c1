// Flow 2: guest sign-in with data migration. A guest favourites a song; commenting needs an
// account, so the action waits for a sign-in and continues once it completes. The guest's
// favourites move to the account in the same write as the credentials. Later the user signs
// out keeping their local data, uses the app as a guest again, and signs back in: the guest's
// new favourites merge into the account's existing ones.
import CredentialVault
import ExampleSupport
import Foundation

let app = try ExampleApp(name: "guest-sign-in")
let session = app.launch()
_ = await session.restore()

// As a guest: save a favourite.
try await session.saveItem(string: "song-1", named: "favourites")

// A deep action needs an account: it waits for the sign-in, then continues.
let comment = Task {
    let user = try await session.requireSignIn {
        // Here the app shows its login screen.
        print("login screen shown")
    }
    return "comment posted as \(user.id)"
}
// The login screen completes: the token response arrives and the app signs the user in.
while await session.pendingSignInRequests == 0 { try await Task.sleep(for: .milliseconds(10)) }
let report = try await session.signIn(user: User(id: "ada", onboardingComplete: true),
                                      credentials: FakeAuthorizationServer.signIn(user: "ada"))
Outcome.expect(try await comment.value == "comment posted as ada", "the waiting action continued after sign-in")
Outcome.expect(report.moved == ["favourites"], "the guest's favourites moved to the account")
Outcome.expect(try await session.itemString(named: "favourites") == "song-1", "the account sees the favourite")

// Sign out, keeping the user's local data on this device for their return.
try await session.signOut(localData: .keep)
try await session.saveItem(string: "song-2", named: "favourites")   // a guest again, favouriting

// The same user signs back in: the account already has data here, so the two lists merge.
let merge = MergePolicy.custom { guest, account in
    func text(_ candidate: MergeCandidate) -> String {
        candidate.value.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }
    return .merged(SecureBytes(copying: Array((text(account) + "," + text(guest)).utf8)))
}
let back = try await session.signIn(user: User(id: "ada"), credentials: FakeAuthorizationServer.signIn(user: "ada"),
                                    policy: merge)
Outcome.expect(back.conflicts.map(\.resolution) == [.merged], "the returning user's favourites were merged")
Outcome.expect(try await session.itemString(named: "favourites") == "song-1,song-2", "both favourites are there")
Outcome.finish(removing: app)
