// Flow 1: anonymous "skip" mode. The first screen offers "Sign in" and "Skip". Skip makes
// the person a guest: a stable anonymous id for this install, every setting back to the
// defaults the app registered (the server URL among them), and no guest items left over.
import CredentialVault
import ExampleSupport

let app = try ExampleApp(name: "anonymous")

// Every launch: register the defaults before reading settings.
let defaults: [String: JSONValue] = ["serverURL": "https://api.example.com", "theme": "system"]
var session = app.launch()
await session.registerDefaults(defaults)

// First launch: nobody is signed in, so restore() reports a guest with a new anonymous id.
guard case let .guest(firstID) = await session.restore() else { fatalError("a new install starts as a guest") }

// The guest plays with settings and saves an item.
try await session.set("dark", forKey: "theme")
try await session.set("https://staging.example.com", forKey: "serverURL")
try await session.saveItem(string: "draft note", named: "draft")

// The person taps "Skip" on a later visit: guest mode from scratch.
let skippedID = try await session.enterGuestMode()
Outcome.expect(skippedID == firstID, "skip keeps the install's anonymous id")
Outcome.expect(try await session.string(forKey: "serverURL") == "https://api.example.com", "the server URL is the default again")
Outcome.expect(try await session.string(forKey: "theme") == "system", "every setting is back to its default")
Outcome.expect(try await session.items().isEmpty, "no guest items are left over")

// Relaunch: the same anonymous id comes back.
session = app.launch()
await session.registerDefaults(defaults)
guard case let .guest(relaunchedID) = await session.restore() else { fatalError("still a guest after a relaunch") }
Outcome.expect(relaunchedID == firstID, "the anonymous id is stable across launches")
Outcome.finish(removing: app)
