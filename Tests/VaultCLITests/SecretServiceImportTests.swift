#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling
import CredentialVault
@testable import VaultCLI

/// `vault import --from secret-service` (issue 37 point 6) against Debian's gnome-keyring: a
/// private bus (`dbus-run-session`), gnome-keyring started unlocked on it, items stored with the
/// real `secret-tool`, then the import (handed to `vault-secret-service`), its dry run, a second run,
/// and the entries as `vault get` and `vault inspect --json` show them. Also: no provider on the
/// bus, no bus, no helper, and the command line's checks.
@Suite(.blockingWork, .serialized) struct SecretServiceImportTests {
    /// A session bus configuration without service directories: nothing is activated on demand, so
    /// a missing provider stays missing (the default one would start gnome-keyring from
    /// /usr/share/dbus-1/services).
    static let busConfiguration = """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>session</type>
          <listen>unix:tmpdir=/tmp</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow send_destination="*" eavesdrop="true"/>
            <allow eavesdrop="true"/>
            <allow own="*"/>
          </policy>
        </busconfig>
        """

    /// The items stored in gnome-keyring: label, attributes, secret (given to secret-tool on its
    /// standard input from an environment variable, never in an argument).
    static let items: [(label: String, attributes: [String: String], secret: String)] = [
        ("GitHub token", ["service": "github.com", "user": "alice"], "ghp_example-secret-1"),
        ("Mail: bob@example.test", ["service": "imap", "user": "bob@example.test", "xdg:schema": "org.example.Mail"], "p@ss wörd 2"),
        ("Same attributes, other label", ["service": "github.com", "user": "alice", "note": "copy"], "third secret"),
    ]

    /// The programs the tests need; nil (a recorded failure under CI=true) when one is missing.
    static func tools(sourceLocation: SourceLocation = #_sourceLocation) -> (dbusRunSession: String, keyring: String, secretTool: String)? {
        guard let dbusRunSession = ExternalProcess.required("dbus-run-session", sourceLocation: sourceLocation),
              let keyring = ExternalProcess.required("gnome-keyring-daemon", sourceLocation: sourceLocation),
              let secretTool = ExternalProcess.required("secret-tool", sourceLocation: sourceLocation) else { return nil }
        return (dbusRunSession, keyring, secretTool)
    }

    /// Single-quoted for bash.
    static func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }

    /// Runs `steps` (bash) under `dbus-run-session` with `busConfiguration`, after starting
    /// gnome-keyring unlocked (password "pw") and storing `items` with secret-tool when `keyring`.
    /// The keyring daemon is started in the foreground and stopped by its PID when the steps end.
    /// `$VAULT` is the built vault; the steps run in the sandbox's root. `env --default-signal`
    /// starts dbus-run-session with no signal blocked: the test process's threads block SIGTERM,
    /// and a child inherits that mask, so without it neither dbus-daemon (which dbus-run-session
    /// stops with SIGTERM) nor gnome-keyring would ever stop.
    static func onPrivateBus(_ sandbox: CLISandbox, key: [String: String], keyring: Bool, steps: String,
                             sourceLocation: SourceLocation = #_sourceLocation) throws -> CLIResult? {
        guard let tools = tools(sourceLocation: sourceLocation) else { return nil }
        let configuration = sandbox.privateFile("bus.conf", busConfiguration)
        for folder in ["run", "home-data"] where !FileManager.default.fileExists(atPath: sandbox.path(folder)) {
            try FileManager.default.createDirectory(atPath: sandbox.path(folder), withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
        }
        var script = "set -u\ncd \(quoted(sandbox.root))\n"
        var environment = sandbox.environment.merging(key) { _, new in new }
        environment["VAULT"] = try CLIBinary.path()
        environment["XDG_RUNTIME_DIR"] = sandbox.path("run")
        environment["XDG_DATA_HOME"] = sandbox.path("home-data")
        environment.removeValue(forKey: "DBUS_SESSION_BUS_ADDRESS")
        if keyring {
            script += """
                printf 'pw\\n' | \(quoted(tools.keyring)) --foreground --unlock --components=secrets >keyring.log 2>&1 &
                KEYRING_PID=$!
                stop_keyring() {
                  kill "$KEYRING_PID" 2>/dev/null
                  for _ in $(seq 100); do kill -0 "$KEYRING_PID" 2>/dev/null || return 0; sleep 0.05; done
                  kill -KILL "$KEYRING_PID" 2>/dev/null
                }
                trap stop_keyring EXIT
                owned=no
                for _ in $(seq 200); do
                  if dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \\
                       org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true'; then
                    owned=yes; break
                  fi
                  sleep 0.05
                done
                [ "$owned" = yes ] || { echo "gnome-keyring did not take org.freedesktop.secrets" >&2; exit 90; }

                """
            for (index, item) in items.enumerated() {
                environment["ITEM_SECRET_\(index)"] = item.secret
                let attributes = item.attributes.sorted { $0.key < $1.key }.map { quoted($0.key) + " " + quoted($0.value) }.joined(separator: " ")
                script += "printf '%s' \"$ITEM_SECRET_\(index)\" | timeout 20 \(quoted(tools.secretTool)) store --label=\(quoted(item.label)) \(attributes)"
                    + " || { echo 'secret-tool store failed' >&2; exit 91; }\n"
            }
        }
        script += steps
        return try ExternalProcess.run("/usr/bin/env", ["--default-signal", tools.dbusRunSession, "--config-file=" + configuration,
                                                        "--", "/bin/bash", "-c", script],
                                       environment: environment, timeout: 240, sourceLocation: sourceLocation)
    }

    /// A file the steps wrote, as text ("" when missing).
    static func text(_ sandbox: CLISandbox, _ name: String) -> String {
        (try? String(contentsOfFile: sandbox.path(name), encoding: .utf8)) ?? ""
    }

    /// Every entry of owner secret-service, from `vault list --json`.
    static func importedEntries(_ sandbox: CLISandbox, _ key: [String: String]) throws -> [[String: Any]] {
        let list = try sandbox.run(["list", "--json"], environment: key)
        #expect(list.status == 0, "\(list.stderrText)")
        let all = (try JSONSerialization.jsonObject(with: list.stdout) as? [[String: Any]]) ?? []
        return all.filter { $0["owner"] as? String == SecretServiceEntries.owner }
    }

    @Test func everyItemIsImportedWithItsLabelAndAttributesOnceAndTheDryRunWritesNothing() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let steps = """
            cp vault/secrets.vault before.vault
            "$VAULT" import --from secret-service --dry-run >dry.out 2>dry.err; echo $? >dry.status
            cmp -s before.vault vault/secrets.vault; echo $? >dry.cmp
            "$VAULT" import --from secret-service --json >import.json 2>import.err; echo $? >import.status
            "$VAULT" import --from secret-service >again.out 2>again.err; echo $? >again.status
            "$VAULT" import --from secret-service --replace --json >replace.json 2>replace.err; echo $? >replace.status

            """
        guard let result = try Self.onPrivateBus(sandbox, key: key, keyring: true, steps: steps) else { return }
        #expect(result.status == 0, "\(result.stderrText)")

        // The dry run lists the three items (label, collection, attributes) and writes nothing.
        #expect(Self.text(sandbox, "dry.status") == "0\n", "\(Self.text(sandbox, "dry.err"))")
        #expect(Self.text(sandbox, "dry.cmp") == "0\n", "the dry run changed the vault file")
        let dry = Self.text(sandbox, "dry.out")
        for item in Self.items {
            #expect(dry.contains("/\(item.label))"), "\(dry)")
            #expect(!dry.contains(item.secret))
        }
        // gnome-keyring may add xdg:schema to an item stored without a schema, so the attributes are
        // checked one by one, not as the whole set.
        #expect(dry.contains("service=github.com, user=alice"), "\(dry)")
        #expect(Self.text(sandbox, "dry.err").contains("Would import 3 entries from secret-service"), "\(Self.text(sandbox, "dry.err"))")

        // The import: three entries of owner secret-service in one write.
        #expect(Self.text(sandbox, "import.status") == "0\n", "\(Self.text(sandbox, "import.err"))")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(Self.text(sandbox, "import.json").utf8)) as? [String: Any])
        let imported = try #require(report["imported"] as? [String])
        #expect(imported.count == 3)
        #expect(report["written"] as? Bool == true)
        #expect(report["owner"] as? String == "secret-service")
        #expect((report["collections"] as? [String: Int])?.values.reduce(0, +) == 3, "\(report)")
        for name in imported {
            #expect(name.count == 16 && name.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }, "\(name)")
        }
        let entries = try Self.importedEntries(sandbox, key)
        #expect(Set(entries.compactMap { $0["name"] as? String }) == Set(imported))

        // vault get shows each secret, vault inspect --json its label and attributes.
        for item in Self.items {
            let entry = try #require(entries.first { $0["label"] as? String == item.label }, "\(item.label)")
            let name = try #require(entry["name"] as? String)
            #expect(entry["kind"] as? String == "password")
            let get = try sandbox.run(["get", "--owner", "secret-service", name], environment: key)
            #expect(get.status == 0, "\(get.stderrText)")
            #expect(get.stdoutText == item.secret || get.stdoutText == item.secret + "\n", "\(item.label)")
            let inspect = try sandbox.run(["inspect", "--owner", "secret-service", name, "--json"], environment: key)
            #expect(inspect.status == 0, "\(inspect.stderrText)")
            let shown = try #require(try JSONSerialization.jsonObject(with: inspect.stdout) as? [String: Any])
            #expect(shown["label"] as? String == item.label)
            let attributes = try #require(shown["attributes"] as? [String: String], "inspect --json has no attributes: \(shown)")
            for (attribute, value) in item.attributes { #expect(attributes[attribute] == value, "\(item.label) \(attribute)") }
        }

        // A second run finds every item imported before and writes nothing; --replace replaces them in place.
        #expect(Self.text(sandbox, "again.status") == "0\n", "\(Self.text(sandbox, "again.err"))")
        #expect(Self.text(sandbox, "again.err").contains("Imported 0 entries from secret-service"), "\(Self.text(sandbox, "again.err"))")
        #expect(Self.text(sandbox, "again.err").contains("3 skipped"), "\(Self.text(sandbox, "again.err"))")
        #expect(Self.text(sandbox, "replace.status") == "0\n", "\(Self.text(sandbox, "replace.err"))")
        let replaced = try #require(try JSONSerialization.jsonObject(with: Data(Self.text(sandbox, "replace.json").utf8)) as? [String: Any])
        #expect(Set(replaced["replaced"] as? [String] ?? []) == Set(imported))
        #expect(try Self.importedEntries(sandbox, key).count == 3)
        // No secret in any output of the commands.
        for file in ["dry.out", "dry.err", "import.json", "import.err", "again.out", "again.err", "replace.json", "replace.err"] {
            for item in Self.items { #expect(!Self.text(sandbox, file).contains(item.secret), "\(file)") }
        }
    }

    /// gnome-keyring's login collection locked again after the items were stored: the import asks
    /// gnome-keyring to unlock it, whose prompt cannot be shown here (no system prompter on the
    /// private bus), so gnome-keyring dismisses it and the import stops (77) with nothing written.
    @Test func aLockedCollectionWhosePromptIsDismissedStopsTheImportWithNothingWritten() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let steps = """
            dbus-send --session --print-reply --dest=org.freedesktop.secrets /org/freedesktop/secrets \\
              org.freedesktop.Secret.Service.Lock array:objpath:/org/freedesktop/secrets/collection/login >/dev/null \\
              || { echo 'Lock failed' >&2; exit 92; }
            "$VAULT" import --from secret-service >locked.out 2>locked.err; echo $? >locked.status

            """
        guard let result = try Self.onPrivateBus(sandbox, key: key, keyring: true, steps: steps) else { return }
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(Self.text(sandbox, "locked.status") == "77\n", "\(Self.text(sandbox, "locked.err"))")
        #expect(Self.text(sandbox, "locked.err").contains("stayed locked"), "\(Self.text(sandbox, "locked.err"))")
        #expect(Self.text(sandbox, "locked.out").isEmpty)
        #expect(try Self.importedEntries(sandbox, key).isEmpty)
    }

    @Test func withoutAProviderOnTheBusTheImportSaysSoAndExits69() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let steps = """
            "$VAULT" import --from secret-service >none.out 2>none.err; echo $? >none.status
            "$VAULT" import --from secret-service --dry-run >dry.out 2>dry.err; echo $? >dry.status

            """
        guard let result = try Self.onPrivateBus(sandbox, key: key, keyring: false, steps: steps) else { return }
        #expect(result.status == 0, "\(result.stderrText)")
        for run in ["none", "dry"] {
            #expect(Self.text(sandbox, "\(run).status") == "69\n", "\(run): \(Self.text(sandbox, "\(run).err"))")
            #expect(Self.text(sandbox, "\(run).err").contains("no program owns org.freedesktop.secrets"), "\(Self.text(sandbox, "\(run).err"))")
            #expect(Self.text(sandbox, "\(run).out").isEmpty)
        }
        #expect(try Self.importedEntries(sandbox, key).isEmpty)
    }

    @Test func withoutASessionBusTheImportExits69() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["import", "--from", "secret-service"],
                                     environment: key.merging(["DBUS_SESSION_BUS_ADDRESS": "unix:path=" + sandbox.path("no-bus")]) { _, new in new })
        #expect(result.status == 69, "\(result.stderrText)")
        #expect(!result.stderrText.isEmpty)
        #expect(try Self.importedEntries(sandbox, key).isEmpty)
    }

    @Test func withoutTheHelperTheImportSaysWhatIsMissing() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let alone = try HelperExecutableTests.vaultAlone(in: sandbox)
        let result = try sandbox.runBinary(alone, ["import", "--from", "secret-service"], environment: key)
        #expect(result.status == 66, "\(result.stderrText)")
        #expect(result.stderrText.contains("needs vault-secret-service, which is not installed beside this vault"), "\(result.stderrText)")
    }

    @Test func sourceIsRefusedForSecretServiceAndNeededForTheFileFormats() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let extra = try sandbox.run(["import", "--from", "secret-service", "somewhere"], environment: key)
        #expect(extra.status == 64, "\(extra.stderrText)")
        #expect(extra.stderrText.contains("takes no SOURCE"), "\(extra.stderrText)")
        let missing = try sandbox.run(["import", "--from", "dotenv"], environment: key)
        #expect(missing.status == 64, "\(missing.stderrText)")
        #expect(missing.stderrText.contains("needs SOURCE"), "\(missing.stderrText)")
    }
}

/// How the items of another provider become entries (`SecretServiceImportReader`): fresh random
/// names, label and attributes kept, and an item imported before found again by its label and
/// attributes, each entry at most once.
@Suite struct SecretServiceImportReaderTests {
    static func item(_ label: String, _ attributes: [String: String], contentType: String = "text/plain",
                     collection: String = "Login") -> SecretServiceItemExport {
        SecretServiceItemExport(collection: collection, label: label, attributes: attributes, secret: SecureBytes(copying: Array("s".utf8)),
                                contentType: contentType, created: nil, modified: nil)
    }

    static func metadata(_ name: String, label: String?, attributes: [String: String], owner: String = "secret-service") -> EntryMetadata {
        EntryMetadata(name: name, owner: owner, kind: .password, label: label, createdAt: Date(), updatedAt: Date(), expiresAt: nil,
                      transferable: true, secretByteCount: 1, attributes: attributes)
    }

    @Test func newItemsGetFreshHexNamesAndKeepLabelAndAttributes() throws {
        let source = try SecretServiceImportReader.read([Self.item("A", ["k": "v"]), Self.item("", [:], contentType: "application/octet-stream")],
                                                        existing: [])
        #expect(source.candidates.count == 2)
        let names = source.candidates.map(\.name)
        #expect(Set(names).count == 2)
        for name in names { #expect(name.count == 16 && name.allSatisfy { $0.isHexDigit && !$0.isUppercase }, "\(name)") }
        #expect(source.candidates[0].label == "A")
        #expect(source.candidates[0].attributes == ["k": "v"])
        #expect(source.candidates[0].owner == "secret-service")
        #expect(source.candidates[0].kind == .password)
        #expect(source.candidates[1].label == nil)
        #expect(source.candidates[1].attributes == [SecretServiceEntries.contentTypeAttribute: "application/octet-stream"])
        #expect(source.candidates[0].shown == "\(names[0]) (Login/A)")
    }

    @Test func itemsImportedBeforeTakeTheirEntrysNameEachEntryOnce() throws {
        let existing = [Self.metadata("00000000000000aa", label: "A", attributes: ["k": "v"]),
                        Self.metadata("00000000000000bb", label: "A", attributes: ["k": "other"]),
                        Self.metadata("00000000000000cc", label: "A", attributes: ["k": "v"], owner: "")]
        let items = [Self.item("A", ["k": "v"]), Self.item("A", ["k": "v"]), Self.item("A", ["k": "other"]), Self.item("B", ["k": "v"])]
        let source = try SecretServiceImportReader.read(items, existing: existing)
        let names = source.candidates.map(\.name)
        #expect(names[0] == "00000000000000aa")
        // The second identical item is a new entry: only one was imported before (the owner-less one does not count).
        #expect(names[1] != "00000000000000aa" && names[1] != "00000000000000cc")
        #expect(names[2] == "00000000000000bb")
        #expect(!["00000000000000aa", "00000000000000bb", "00000000000000cc"].contains(names[3]))
        #expect(Set(names).count == 4)
    }

    /// A label the vault refuses (Python keyring's hold a tab and a line break) is stored as the
    /// provider stores it: U+FFFD in the entry's label, the exact label in `vault:label`; an item
    /// with an attribute over the limits is invalid on its own (`--skip-invalid` skips it), the
    /// others are imported.
    @Test func labelsWithControlCharactersTakeTheProvidersFallbackAndBadAttributesAreInvalidAlone() throws {
        let label = "Password for 'alice' on 'svc'\tx\n"
        let items = [Self.item(label, ["service": "svc"]), Self.item("too long", ["k": String(repeating: "v", count: 1025)]),
                     Self.item("plain", ["service": "other"])]
        let source = try SecretServiceImportReader.read(items, existing: [])
        #expect(source.candidates[0].label == "Password for 'alice' on 'svc'\u{FFFD}x\u{FFFD}")
        #expect(source.candidates[0].attributes == ["service": "svc", SecretServiceEntries.labelAttribute: label])
        #expect(source.candidates[2].attributes == ["service": "other"], "a usable label is kept as the entry's label only")
        let plan = ImportPlan(source, checkSecrets: true)
        #expect(plan.invalid.map(\.name) == [source.candidates[1].name])
        #expect(plan.toImport.map(\.name) == [source.candidates[0].name, source.candidates[2].name])
        // Imported before: the same item matches the entry it made (by the stored label and attributes).
        let again = try SecretServiceImportReader.read([items[0]], existing: [
            Self.metadata("00000000000000aa", label: source.candidates[0].label, attributes: source.candidates[0].attributes)])
        #expect(again.candidates[0].name == "00000000000000aa")
    }
}
