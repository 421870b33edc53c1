#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling
@testable import VaultSecretService
import CredentialVault
import VaultCLI

/// The Secret Service provider (issue 37) against the real clients of Debian (secret-tool, Python's
/// secretstorage and jeepney) on a private dbus-daemon, served by the built `vault-secret-service
/// agent --secret-service`: round trips through dh and plain sessions, what is sealed at rest, the
/// name's owner, locked vaults and their prompts, sessions bound to their connection, malformed calls.
@Suite(.blockingWork, .serialized) struct SecretServiceProviderTests {
    @Test func secretToolStoresAndLooksUpThroughADHSession() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld()
        try world.unlock()
        let stored = try world.secretTool(["store", "--label", "Example login", "service", "example.org", "user", "alice"],
                                          stdin: Data("s3cret-value".utf8))
        #expect(stored.status == 0, "\(stored.stderrText)")
        let found = try world.secretTool(["lookup", "service", "example.org", "user", "alice"])
        #expect(found.status == 0, "\(found.stderrText)")
        #expect(found.stdoutText == "s3cret-value")
        let missing = try world.secretTool(["lookup", "service", "example.org", "user", "bob"])
        #expect(missing.status != 0 && missing.stdoutText.isEmpty, "no item matches bob")
        // Storing the same attributes again replaces the item (CreateItem with replace).
        _ = try world.secretTool(["store", "--label", "Example login", "service", "example.org", "user", "alice"], stdin: Data("second".utf8))
        #expect(try world.secretTool(["lookup", "service", "example.org", "user", "alice"]).stdoutText == "second")
        let search = try world.secretTool(["search", "--all", "service", "example.org"])
        #expect(search.stdoutText.components(separatedBy: "label = Example login").count == 2, "one item: \(search.stdoutText)")
        #expect((search.stdoutText + search.stderrText).contains("attribute.user = alice"), "secret-tool prints attributes on stderr")
        let cleared = try world.secretTool(["clear", "service", "example.org", "user", "alice"])
        #expect(cleared.status == 0)
        #expect(try world.secretTool(["lookup", "service", "example.org", "user", "alice"]).stdoutText.isEmpty)
    }

    @Test func secretstorageUsesTheDefaultCollectionThroughItsAlias() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld()
        try world.unlock()
        let result = try world.python("""
            import secretstorage
            connection = secretstorage.dbus_init()
            collection = secretstorage.get_default_collection(connection)
            item = collection.create_item("py label", {"app": "pytest", "n": "1"}, b"py-secret", replace=True)
            print("locked", collection.is_locked(), item.is_locked())
            found = list(collection.search_items({"app": "pytest"}))
            print("found", len(found), found[0].get_secret().decode(), found[0].get_label(), sorted(found[0].get_attributes().items()))
            item.set_label("renamed")
            item.set_attributes({"app": "pytest", "n": "2"})
            print("changed", item.get_label(), item.get_attributes()["n"], item.get_secret().decode())
            item.delete()
            print("after delete", len(list(collection.search_items({"app": "pytest"}))))
            """)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdoutText.contains("locked False False"))
        #expect(result.stdoutText.contains("found 1 py-secret py label [('app', 'pytest'), ('n', '1')]"), "\(result.stdoutText)")
        #expect(result.stdoutText.contains("changed renamed 2 py-secret"))
        #expect(result.stdoutText.contains("after delete 0"))
    }

    /// A plain session (jeepney speaking the protocol itself), a session used from another
    /// connection (refused), and malformed calls: each a clear D-Bus error, and the agent still serves.
    @Test func plainSessionsBelongToTheirConnectionAndMalformedCallsAreRefused() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld()
        try world.unlock()
        let result = try world.python("""
            from jeepney import DBusAddress, new_method_call, MessageType, HeaderFields
            from jeepney.io.blocking import open_dbus_connection
            NAME = "org.freedesktop.secrets"
            service = DBusAddress("/org/freedesktop/secrets", bus_name=NAME, interface="org.freedesktop.Secret.Service")
            a = open_dbus_connection(bus="SESSION")
            b = open_dbus_connection(bus="SESSION")
            def call(connection, address, method, signature=None, body=()):
                reply = connection.send_and_get_reply(new_method_call(address, method, signature, body), timeout=10)
                if reply.header.message_type == MessageType.error:
                    return ("ERROR", reply.header.fields[HeaderFields.error_name])
                return reply.body
            output, session = call(a, service, "OpenSession", "sv", ("plain", ("s", "")))
            collection = DBusAddress("/org/freedesktop/secrets/aliases/default", bus_name=NAME, interface="org.freedesktop.Secret.Collection")
            properties = {"org.freedesktop.Secret.Item.Label": ("s", "plain label"),
                          "org.freedesktop.Secret.Item.Attributes": ("a{ss}", {"kind": "plain"})}
            path, prompt = call(a, collection, "CreateItem", "a{sv}(oayays)b", (properties, (session, b"", b"plain-secret", "text/plain"), True))
            print("prompt", prompt)
            item = DBusAddress(path, bus_name=NAME, interface="org.freedesktop.Secret.Item")
            print("plain", call(a, item, "GetSecret", "o", (session,))[0][2])
            print("other", call(b, item, "GetSecret", "o", (session,)))
            print("close", call(b, DBusAddress(session, bus_name=NAME, interface="org.freedesktop.Secret.Session"), "Close"))
            print("signature", call(a, service, "OpenSession", "ss", ("plain", "x")))
            print("algorithm", call(a, service, "OpenSession", "sv", ("rot13", ("s", ""))))
            print("dhkey", call(a, service, "OpenSession", "sv", ("dh-ietf1024-sha256-aes128-cbc-pkcs7", ("ay", b"\\x00"))))
            print("short", call(a, service, "GetSecrets", "ao", ([path],)))
            print("iv", call(a, collection, "CreateItem", "a{sv}(oayays)b", (properties, (session, b"xx", b"v", "text/plain"), False)))
            print("nosession", call(a, collection, "CreateItem", "a{sv}(oayays)b", (properties, ("/org/freedesktop/secrets/session/999", b"", b"v", "text/plain"), False)))
            print("nocollection", call(a, DBusAddress("/org/freedesktop/secrets/collection/nope", bus_name=NAME, interface="org.freedesktop.Secret.Collection"), "SearchItems", "a{ss}", ({},)))
            print("unknown", call(a, service, "Frobnicate"))
            print("delete vault", call(a, collection, "Delete"))
            print("again", call(a, item, "GetSecret", "o", (session,))[0][2])
            """)
        #expect(result.status == 0, "\(result.stderrText)")
        let lines = result.stdoutText
        #expect(lines.contains("prompt /\n"))
        #expect(lines.contains("plain b'plain-secret'"))
        #expect(lines.contains("other ('ERROR', 'org.freedesktop.Secret.Error.NoSession')"), "\(lines)")
        #expect(lines.contains("close ('ERROR', 'org.freedesktop.DBus.Error.AccessDenied')"))
        #expect(lines.contains("signature ('ERROR', 'org.freedesktop.DBus.Error.InvalidArgs')"))
        #expect(lines.contains("algorithm ('ERROR', 'org.freedesktop.DBus.Error.NotSupported')"))
        #expect(lines.contains("dhkey ('ERROR', 'org.freedesktop.DBus.Error.InvalidArgs')"))
        #expect(lines.contains("short ('ERROR', 'org.freedesktop.DBus.Error.InvalidArgs')"))
        #expect(lines.contains("iv ('ERROR', 'org.freedesktop.DBus.Error.InvalidArgs')"))
        #expect(lines.contains("nosession ('ERROR', 'org.freedesktop.Secret.Error.NoSession')"))
        #expect(lines.contains("nocollection ('ERROR', 'org.freedesktop.Secret.Error.NoSuchObject')"))
        #expect(lines.contains("unknown ('ERROR', 'org.freedesktop.DBus.Error.UnknownMethod')"))
        #expect(lines.contains("delete vault ('ERROR', 'org.freedesktop.DBus.Error.NotSupported')"))
        #expect(lines.contains("again b'plain-secret'"), "the agent still serves after the bad calls")
        #expect(world.agent?.isRunning == true)
    }

    /// A session goes when the connection that opened it leaves the bus (NameOwnerChanged).
    @Test func aSessionEndsWithItsConnection() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld()
        let result = try world.python("""
            import time
            from jeepney import DBusAddress, new_method_call
            from jeepney.io.blocking import open_dbus_connection
            NAME = "org.freedesktop.secrets"
            service = DBusAddress("/org/freedesktop/secrets", bus_name=NAME, interface="org.freedesktop.Secret.Service")
            folder = DBusAddress("/org/freedesktop/secrets/session", bus_name=NAME, interface="org.freedesktop.DBus.Introspectable")
            a = open_dbus_connection(bus="SESSION")
            b = open_dbus_connection(bus="SESSION")
            path = a.send_and_get_reply(new_method_call(service, "OpenSession", "sv", ("plain", ("s", ""))), timeout=10).body[1]
            node = '<node name="%s"/>' % path.rsplit("/", 1)[1]
            print("open", node in b.send_and_get_reply(new_method_call(folder, "Introspect"), timeout=10).body[0])
            a.close()
            for _ in range(100):
                if node not in b.send_and_get_reply(new_method_call(folder, "Introspect"), timeout=10).body[0]:
                    print("gone")
                    break
                time.sleep(0.05)
            """)
        #expect(result.stdoutText.contains("open True"), "\(result.stdoutText) \(result.stderrText)")
        #expect(result.stdoutText.contains("gone"))
    }

    /// Label, attributes and secret are sealed in the vault file; the item is an entry of owner
    /// secret-service that `vault list` shows and `vault get` reads.
    @Test func itemsAreSealedVaultEntriesOfOwnerSecretService() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld()
        try world.unlock()
        let stored = try world.secretTool(["store", "--label", "label-canary-7f3a", "attr-name-canary-91c2", "attr-value-canary-55d1"],
                                          stdin: Data("secret-canary-0b9e".utf8))
        #expect(stored.status == 0, "\(stored.stderrText)")
        let bytes = try world.vaultBytes()
        for canary in ["label-canary-7f3a", "attr-name-canary-91c2", "attr-value-canary-55d1", "secret-canary-0b9e", "secret-service"] {
            #expect(bytes.range(of: Data(canary.utf8)) == nil, "\(canary) is not in the vault's files in clear")
        }
        let listed = try world.vault(["list", "--owner", "secret-service"], environment: ["VAULT_PASSPHRASE": SecretServiceWorld.passphrase])
        #expect(listed.status == 0, "\(listed.stderrText)")
        #expect(listed.stdoutText.contains("label-canary-7f3a"))
        let name = try #require(listed.stdoutText.split(separator: "\n").dropFirst().first?.split(separator: " ", omittingEmptySubsequences: true)
            .dropFirst().first.map(String.init))
        #expect(name.count == 16 && name.allSatisfy(\.isHexDigit), "the entry's name is the item's path element: \(name)")
        let got = try world.vault(["get", name, "--owner", "secret-service"], environment: ["VAULT_PASSPHRASE": SecretServiceWorld.passphrase])
        #expect(got.stdoutText == "secret-canary-0b9e", "\(got.stderrText)")
    }

    /// A label the vault's labels cannot hold (Python keyring's name the user and service as given:
    /// line breaks, tabs) is kept exactly for clients, hidden in the sealed attributes, and shown by
    /// `vault list` with U+FFFD in place of what it refuses; the hidden attributes stay hidden.
    @Test func labelsWithControlCharactersAreKeptExactly() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld()
        try world.unlock()
        let result = try world.python("""
            import secretstorage
            connection = secretstorage.dbus_init()
            collection = secretstorage.get_default_collection(connection)
            item = collection.create_item("line one\\nline\\ttwo", {"app": "ctl", "vault:label": "spoof"}, b"v", content_type="application/x-test")
            found = list(collection.search_items({"app": "ctl"}))[0]
            print(repr(found.get_label()), sorted(found.get_attributes().items()), found.get_secret_content_type())
            """)
        #expect(result.stdoutText.contains("'line one\\nline\\ttwo' [('app', 'ctl')] application/x-test"), "\(result.stdoutText) \(result.stderrText)")
        let listed = try world.vault(["list", "--owner", "secret-service"], environment: ["VAULT_PASSPHRASE": SecretServiceWorld.passphrase])
        #expect(listed.stdoutText.contains("line one\u{FFFD}line\u{FFFD}two"), "\(listed.stdoutText)")
    }

    /// Another user's process on the bus (a bus whose policy lets every uid in, unlike a session
    /// bus) is refused by the provider itself: AccessDenied, logged, and the agent keeps serving.
    @Test func anotherUsersCallerIsRefused() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld(startAgent: false, everyUsersBus: true)
        let log = try world.startProvider([], socket: world.socket)
        try world.unlock()
        #expect(try world.secretTool(["store", "--label", "x", "k", "v"], stdin: Data("mine".utf8)).status == 0)
        let other = try world.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/secret-tool", "lookup", "k", "v"],
                                  environment: ["HOME": "/tmp"])
        #expect(other.status != 0)
        #expect(other.stdoutText.isEmpty, "nothing is served to another user")
        #expect(world.log(log).contains("serves only its own user"), "\(world.log(log))")
        #expect(try world.secretTool(["lookup", "k", "v"]).stdoutText == "mine")
    }

    @Test func aNameOwnedByAnotherProgramIsAClearErrorUnlessReplaceIsGiven() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld(startAgent: false)
        // A stand-in owner that allows replacement (as gnome-keyring-daemon --replace expects).
        let holder = world.script("holder.py", """
            #!/usr/bin/python3
            import sys, time
            from jeepney.io.blocking import open_dbus_connection
            from jeepney.bus_messages import message_bus
            connection = open_dbus_connection(bus="SESSION")
            flags = 1 if sys.argv[1] == "replaceable" else 0
            print(connection.send_and_get_reply(message_bus.RequestName("org.freedesktop.secrets", flags), timeout=10).body[0], flush=True)
            time.sleep(60)
            """)
        func startHolder(_ mode: String) throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: holder)
            process.arguments = [mode]
            process.environment = world.environment
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            try SecretServiceWorld.wait("the stand-in owning the name") {
                (try? world.run("/usr/bin/dbus-send", ["--session", "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
                                                       "org.freedesktop.DBus.NameHasOwner", "string:org.freedesktop.secrets"]))?
                    .stdoutText.contains("boolean true") == true
            }
            return process
        }
        let stubborn = try startHolder("stubborn")
        defer { kill(stubborn.processIdentifier, SIGKILL); stubborn.waitUntilExit() }
        let refused = try world.startProvider([], socket: world.root + "/a.sock")
        try SecretServiceWorld.wait("the refused agent to exit") { world.agent?.isRunning == false }
        #expect(world.agent?.terminationStatus != 0)
        #expect(world.log(refused).contains("owns org.freedesktop.secrets"), "\(world.log(refused))")
        #expect(world.log(refused).contains("--replace"))
        let stillRefused = try world.startProvider(["--replace"], socket: world.root + "/b.sock")
        try SecretServiceWorld.wait("the refused agent to exit") { world.agent?.isRunning == false }
        #expect(world.log(stillRefused).contains("does not let it be replaced"), "\(world.log(stillRefused))")
        kill(stubborn.processIdentifier, SIGKILL)
        stubborn.waitUntilExit()

        let replaceable = try startHolder("replaceable")
        defer { kill(replaceable.processIdentifier, SIGKILL); replaceable.waitUntilExit() }
        let replacing = try world.startProvider(["--replace"], socket: world.root + "/c.sock")
        #expect(world.agent?.isRunning == true, "\(world.log(replacing))")
        try world.unlock(socket: world.root + "/c.sock")
        let stored = try world.secretTool(["store", "--label", "x", "k", "v"], stdin: Data("after-replace".utf8))
        #expect(stored.status == 0, "\(stored.stderrText)")
        #expect(try world.secretTool(["lookup", "k", "v"]).stdoutText == "after-replace")
    }

    /// A locked vault: a search still finds the items it knew (as locked), and libsecret unlocks
    /// them through the provider's prompt, which asks $VAULT_PINENTRY; a cancelled pinentry
    /// dismisses the prompt and the vault stays locked; without a pinentry the prompt is dismissed.
    @Test func aLockedVaultIsUnlockedThroughAPromptAndAPinentry() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld(startAgent: false)
        let pinentry = world.pinentry()
        let log = try world.startProvider([], environment: ["VAULT_PINENTRY": pinentry.program], socket: world.socket)
        // Locked and never read: the search says so instead of "no match".
        let cold = try world.secretTool(["lookup", "k", "v"])
        #expect(cold.status != 0)
        #expect(cold.stderrText.contains("vault unlock"), "\(cold.stderrText)")
        try world.unlock()
        #expect(try world.secretTool(["store", "--label", "x", "k", "v"], stdin: Data("locked-secret".utf8)).status == 0)
        #expect(try world.vault(["lock"]).status == 0)
        let unlocked = try world.secretTool(["lookup", "k", "v"])
        #expect(unlocked.stdoutText == "locked-secret", "\(unlocked.stderrText) \(world.log(log))")
        #expect(try world.vault(["agent", "--status"]).stdoutText.contains("unlocked:"))

        #expect(try world.vault(["lock"]).status == 0)
        FileManager.default.createFile(atPath: pinentry.cancelFlag, contents: nil)
        let cancelled = try world.secretTool(["lookup", "k", "v"])
        #expect(cancelled.stdoutText.isEmpty)
        #expect(try world.vault(["agent", "--status"]).stdoutText.contains("no vault unlocked"))
        #expect(world.log(log).contains("did not unlock"), "\(world.log(log))")
    }

    @Test func withoutAPinentryThePromptIsDismissedAndLogged() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld()
        try world.unlock()
        #expect(try world.secretTool(["store", "--label", "x", "k", "v"], stdin: Data("v1".utf8)).status == 0)
        #expect(try world.vault(["lock"]).status == 0)
        let result = try world.python("""
            import secretstorage
            connection = secretstorage.dbus_init()
            collection = secretstorage.get_default_collection(connection)
            print("locked", collection.is_locked())
            print("dismissed", collection.unlock())
            print("still", collection.is_locked())
            """)
        #expect(result.stdoutText.contains("locked True"), "\(result.stdoutText) \(result.stderrText)")
        #expect(result.stdoutText.contains("dismissed True"))
        #expect(result.stdoutText.contains("still True"))
    }

    /// The agent's rules (agent.json) apply to D-Bus callers with the items' attributes: a refused
    /// GetSecret is AccessDenied naming the rule (and logged without a value), an item the caller
    /// may not list is left out of searches, and other items are served as before.
    @Test func theAgentsRulesApplyToBusCallersWithTheItemsAttributes() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld(startAgent: false)
        try FileManager.default.createDirectory(atPath: world.root + "/config/vault", withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        FileManager.default.createFile(atPath: world.root + "/config/vault/agent.json", contents: Data("""
            {"rules": [
              {"name": "no secrets of denied.example", "action": "deny", "operations": ["get"], "attributes": {"service": "denied.example"}},
              {"name": "hidden items", "action": "deny", "operations": ["list"], "attributes": {"service": "hidden.example"}}
            ]}
            """.utf8), attributes: [.posixPermissions: 0o600])
        let log = try world.startProvider([], socket: world.socket)
        try world.unlock()
        for service in ["ok.example", "denied.example", "hidden.example"] {
            let stored = try world.secretTool(["store", "--label", service, "service", service], stdin: Data("value-of-\(service)".utf8))
            #expect(stored.status == 0, "\(stored.stderrText)")
        }
        #expect(try world.secretTool(["lookup", "service", "ok.example"]).stdoutText == "value-of-ok.example")
        let denied = try world.python("""
            import secretstorage
            connection = secretstorage.dbus_init()
            collection = secretstorage.get_default_collection(connection)
            item = list(collection.search_items({"service": "denied.example"}))[0]
            try:
                item.get_secret()
                print("served")
            except Exception as error:
                print("refused", error)
            print("hidden", len(list(collection.search_items({"service": "hidden.example"}))))
            print("all", len(list(collection.get_all_items())))
            """)
        #expect(denied.stdoutText.contains("refused"), "\(denied.stdoutText) \(denied.stderrText)")
        #expect(denied.stdoutText.contains("rule 1 (no secrets of denied.example)"))
        #expect(!denied.stdoutText.contains("value-of-denied"))
        #expect(denied.stdoutText.contains("hidden 0"))
        #expect(denied.stdoutText.contains("all 2"))
        #expect(try world.secretTool(["lookup", "service", "denied.example"]).stdoutText.isEmpty)
        let written = world.log(log)
        #expect(written.contains("refused get of Secret Service item"), "\(written)")
        #expect(!written.contains("value-of-"))
    }

    /// `exportItems` (what `vault import --from secret-service` copies) reads every item of the
    /// provider that owns the name, here another vault agent, secrets and attributes included.
    @Test func exportReadsEveryItemOfTheProviderOwningTheName() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld()
        try world.unlock()
        #expect(try world.secretTool(["store", "--label", "first", "app", "one"], stdin: Data("secret-one".utf8)).status == 0)
        #expect(try world.secretTool(["store", "--label", "second", "--collection", "/org/freedesktop/secrets/collection/session",
                                      "app", "two"], stdin: Data("secret-two".utf8)).status == 0)
        let exported = try SecretServiceCommands(busAddress: world.busAddress)
            .exportItems(SecretServiceExportSetup(environment: CommandEnvironment(), timeout: .seconds(20)))
        let byLabel = Dictionary(exported.map { ($0.label, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byLabel.count == 2)
        #expect(byLabel["first"]?.attributes == ["app": "one"])
        #expect(byLabel["first"]?.secret == SecureBytes(copying: Array("secret-one".utf8)))
        #expect(byLabel["first"]?.collection == "Login")
        #expect(byLabel["second"]?.secret == SecureBytes(copying: Array("secret-two".utf8)))
        #expect(byLabel["second"]?.collection == "Session")
        #expect(byLabel["first"]?.created != nil)
    }
}
