// Flow 3: anonymous purchases that do not transfer. A guest buys consumable coins (tied to
// this install's anonymous id, non-transferable) and a theme (transferable). On sign-in the
// theme moves to the account and the coins stay with the guest, where the app can still
// reach them while someone is signed in.
import CredentialVault
import ExampleSupport

let app = try ExampleApp(name: "purchases")
let session = app.launch()
guard case let .guest(anonymousID) = await session.restore() else { fatalError("a new install starts as a guest") }

try await session.saveItem(NewEntry(name: "coins", secret: SecureBytes(copying: Array("150".utf8)), transferable: false))
try await session.saveItem(NewEntry(name: "theme-pack", secret: SecureBytes(copying: Array("receipt-42".utf8))))

let report = try await session.signIn(user: User(id: "grace", onboardingComplete: true),
                                      credentials: FakeAuthorizationServer.signIn(user: "grace"))
Outcome.expect(report.moved == ["theme-pack"], "the transferable purchase moved to the account")
Outcome.expect(report.stayed == ["coins"], "the consumable stayed with the guest")
Outcome.expect(report.anonymousID == anonymousID, "the report names the guest it came from")
Outcome.expect(try await session.items().map(\.name) == ["theme-pack"], "the account has the theme")
Outcome.expect(try await session.guestItems().map(\.name) == ["coins"], "the guest's coins are still reachable")

// Signing out returns to the same guest, coins included.
try await session.signOut()
Outcome.expect(try await session.itemString(named: "coins") == "150", "the guest has the coins back after sign-out")
Outcome.finish(removing: app)
