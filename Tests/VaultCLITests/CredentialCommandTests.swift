import Foundation
import Testing
import TestScheduling

/// The credential commands, driven through the built `vault` binary as a user would.
@Suite(.blockingWork) struct CredentialCommandTests {
    @Test func keygenWritesAPrivate32ByteKeyAndNeverOverwrites() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let path = sandbox.path("new.key")
        #expect(try sandbox.run(["keygen", path]).status == 0)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect((attributes[.size] as? NSNumber)?.intValue == 32)
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let again = try sandbox.run(["keygen", path])
        #expect(again.status == 73)
        #expect(again.stderrText.hasPrefix("vault: "))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func keygenMakesMissingFoldersPrivateAndLeavesExistingOnesAlone() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        // An existing, ordinary 0755 folder (like ~/.config on many systems) stays as it is.
        try FileManager.default.createDirectory(atPath: sandbox.path("home"), withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o755])
        let path = sandbox.path("home/.config/vault/key")
        let result = try sandbox.run(["keygen", path])
        #expect(result.status == 0, "\(result.stderrText)")
        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
        }
        #expect(try mode(sandbox.path("home")) == 0o755)
        #expect(try mode(sandbox.path("home/.config")) == 0o700)
        #expect(try mode(sandbox.path("home/.config/vault")) == 0o700)
        #expect(try mode(path) == 0o600)
        // A path through a regular file fails cleanly and creates nothing.
        _ = sandbox.privateFile("plain", "x")
        let blocked = try sandbox.run(["keygen", sandbox.path("plain/sub/key")])
        #expect(blocked.status != 0)
        #expect(blocked.stderrText.hasPrefix("vault: "))
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("plain/sub")))
    }

    @Test func initCreatesAnEmptyVaultAndRefusesASecond() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(FileManager.default.fileExists(atPath: sandbox.vaultFile))
        let list = try sandbox.run(["list", "--json"], environment: key)
        #expect(list.status == 0)
        #expect(try JSONSerialization.jsonObject(with: list.stdout) as? [Any] != nil)
        let second = try sandbox.run(["init"], environment: key)
        #expect(second.status == 73)
        #expect(second.stderrText.contains("hint: "))
    }

    @Test func getRoundTripsBinarySecretsWithNULBytesExactly() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let everyByte = Data((0...255).map { UInt8($0) } + [0, 0, 10, 13, 10])
        #expect(try sandbox.run(["add", "binary"], stdin: everyByte, environment: key).status == 0)
        let get = try sandbox.run(["get", "binary"], environment: key)
        #expect(get.status == 0)
        #expect(get.stdout == everyByte)
        // A trailing newline from a pipe is part of the secret.
        #expect(try sandbox.run(["add", "line"], stdin: Data(text: "token\n"), environment: key).status == 0)
        #expect(try sandbox.run(["get", "line"], environment: key).stdout == Data(text: "token\n"))
    }

    @Test func addRefusesAnExistingNameUnlessReplacing() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "api"], stdin: Data(text: "first"), environment: key).status == 0)
        let duplicate = try sandbox.run(["add", "api"], stdin: Data(text: "second"), environment: key)
        #expect(duplicate.status == 73)
        #expect(duplicate.stderrText.contains("--replace"))
        #expect(try sandbox.run(["get", "api"], environment: key).stdout == Data(text: "first"))
        #expect(try sandbox.run(["add", "api", "--replace"], stdin: Data(text: "second"), environment: key).status == 0)
        #expect(try sandbox.run(["get", "api"], environment: key).stdout == Data(text: "second"))
    }

    @Test func addStoresKindLabelAndExpiry() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let add = try sandbox.run(["add", "a", "--kind", "access-token", "--label", "Work", "--expires-at", "2030-01-02T03:04:05Z"],
                                  stdin: Data(text: "x"), environment: key)
        #expect(add.status == 0)
        #expect(try sandbox.run(["add", "r", "--kind", "refreshToken", "--expires-in", "1h30m"],
                                stdin: Data(text: "y"), environment: key).status == 0)
        let entries = try listJSON(sandbox, key)
        let a = try #require(entries.first { $0["name"] as? String == "a" })
        #expect(a["kind"] as? String == "accessToken")
        #expect(a["label"] as? String == "Work")
        #expect(a["expiresAt"] as? String == "2030-01-02T03:04:05.000Z")
        let r = try #require(entries.first { $0["name"] as? String == "r" })
        let expiresAt = try #require((r["expiresAt"] as? String).flatMap(parseRFC3339))
        #expect(abs(expiresAt.timeIntervalSinceNow - 5400) < 120)
    }

    @Test(arguments: [
        ["add", "x", "--kind", "token"],
        ["add", "x", "--expires-in", "90"],
        ["add", "x", "--expires-in", "1y"],
        ["add", "x", "--expires-at", "tomorrow"],
        ["add", "x", "--expires-at", "2030-01-01T00:00:00Z", "--expires-in", "1h"],
        ["list", "--expiring-within", "soon"],
        ["add"],
        ["frobnicate"],
    ])
    func badArgumentsExitWithUsage(arguments: [String]) throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(arguments, stdin: Data(text: "s3cret-value"), environment: key)
        #expect(result.status == 64, "\(arguments): \(result.stderrText)")
        #expect(!result.stderrText.contains("s3cret-value"))
    }

    @Test func addRefusesAnEmptySecret() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let result = try sandbox.run(["add", "empty"], stdin: Data(), environment: key)
        #expect(result.status == 64)
        #expect(try sandbox.run(["get", "empty"], environment: key).status == 66)
    }

    @Test func missingEntryAndMissingVaultExit66() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        for command in [["get", "nope"], ["inspect", "nope"], ["rm", "nope"]] {
            let result = try sandbox.run(command, environment: key)
            #expect(result.status == 66, "\(command)")
            #expect(result.stderrText.contains("'nope'"))
        }
        let elsewhere = ["VAULT_DIR": sandbox.path("no-vault-here")]
        for command in [["list"], ["get", "x"], ["verify"], ["rotate"]] {
            #expect(try sandbox.run(command, environment: key.merging(elsewhere) { $1 }).status == 66, "\(command)")
        }
        #expect(try sandbox.run(["add", "x"], stdin: Data(text: "v"), environment: key.merging(elsewhere) { $1 }).status == 66)
    }

    @Test func getIntoAFullOrClosedStandardOutputFails() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "t"], stdin: Data(text: "a-secret-token"), environment: key).status == 0)
        let full = try #require(FileHandle(forWritingAtPath: "/dev/full"))
        defer { try? full.close() }
        let result = try sandbox.run(["get", "t"], environment: key, standardOutput: full)
        #expect(result.status == 74)
        #expect(result.stderrText.contains("standard output"))
        #expect(!result.stderrText.contains("a-secret-token"))

        let pipe = Pipe()
        try pipe.fileHandleForReading.close()
        let closed = try sandbox.run(["get", "t"], environment: key, standardOutput: pipe.fileHandleForWriting)
        #expect(closed.status == 74, "\(closed.stderrText)")
        let listed = try sandbox.run(["list"], environment: key, standardOutput: full)
        #expect(listed.status == 74)
    }

    @Test func listJSONHasTheDocumentedShape() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "old", "--expires-at", "2001-01-01T00:00:00Z"], stdin: Data(text: "o"), environment: key).status == 0)
        #expect(try sandbox.run(["add", "plain", "--label", "L"], stdin: Data(text: "pppp"), environment: key).status == 0)
        let entries = try listJSON(sandbox, key)
        #expect(entries.map { $0["name"] as? String } == ["old", "plain"])
        let required: Set = ["name", "kind", "label", "createdAt", "updatedAt", "expiresAt", "expired", "owner", "secretBytes"]
        for entry in entries {
            #expect(required.isSubset(of: Set(entry.keys)), "keys: \(entry.keys.sorted())")
            for field in ["createdAt", "updatedAt"] {
                #expect((entry[field] as? String).flatMap(parseRFC3339) != nil, "\(field) is RFC 3339")
            }
        }
        #expect(entries[0]["expired"] as? Bool == true)
        #expect(entries[1]["expired"] as? Bool == false)
        #expect(entries[1]["expiresAt"] is NSNull)
        #expect(entries[0]["label"] is NSNull)
        #expect((entries[1]["secretBytes"] as? NSNumber)?.intValue == 4)
        #expect(entries[1]["owner"] as? String == "")
    }

    @Test func listFiltersByExpiryAndAlignsColumns() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        for (name, expiry) in [("soon", "10m"), ("later", "3d"), ("a-much-longer-name", "2h")] {
            #expect(try sandbox.run(["add", name, "--expires-in", expiry], stdin: Data(text: "v"), environment: key).status == 0)
        }
        #expect(try sandbox.run(["add", "forever"], stdin: Data(text: "v"), environment: key).status == 0)
        let within = try listJSON(sandbox, key, extra: ["--expiring-within", "1h"])
        #expect(within.map { $0["name"] as? String } == ["soon"])
        let human = try sandbox.run(["list"], environment: key)
        #expect(human.status == 0)
        let lines = human.stdoutText.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        #expect(lines[0].hasPrefix("NAME"))
        let kindColumn = try #require(lines[0].range(of: "KIND")).lowerBound.utf16Offset(in: lines[0])
        for line in lines.dropFirst() {
            #expect(line.count > kindColumn)
            #expect(Array(line)[kindColumn] == "g", "KIND column aligned in \(line)")
        }
        #expect(human.stdoutText.contains("no expiry"))
        #expect(human.stdoutText.contains("expires in 9 min") || human.stdoutText.contains("expires in 10 min"))
    }

    @Test func inspectShowsJWTClaimsButNeverTheTokenOrSignature() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let header = base64URL(#"{"alg":"RS256","kid":"k1","typ":"JWT"}"#)
        let claims = base64URL(#"{"sub":"user-42","iss":"https://issuer.example","exp":4102444800}"#)
        let signature = "U0lHTkFUVVJFLVNIT1VMRC1ORVZFUi1CRS1TSE9XTg"
        let token = "\(header).\(claims).\(signature)"
        #expect(try sandbox.run(["add", "id", "--kind", "id-token"], stdin: Data(text: token), environment: key).status == 0)
        let human = try sandbox.run(["inspect", "id"], environment: key)
        #expect(human.status == 0)
        #expect(human.stdoutText.contains("user-42"))
        #expect(human.stdoutText.contains("RS256"))
        #expect(human.stdoutText.contains("eyJh…"))
        let json = try sandbox.run(["inspect", "id", "--json"], environment: key)
        let object = try #require(try JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        let jwt = try #require(object["jwt"] as? [String: Any])
        #expect((jwt["claims"] as? [String: Any])?["sub"] as? String == "user-42")
        #expect((jwt["header"] as? [String: Any])?["kid"] as? String == "k1")
        // The exp claim became the entry's expiry: no --expires-* was given.
        #expect(object["expiresAt"] as? String == "2100-01-01T00:00:00.000Z")
        for output in [human, json] {
            #expect(!output.stdout.contains(Data(text: signature)))
            #expect(!output.stdout.contains(Data(text: claims)))
            #expect(!output.stdout.contains(Data(text: token)))
        }
    }

    @Test func inspectShowsExpiryAndHidesShortSecrets() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "pin", "--kind", "password", "--expires-in", "2h"],
                                stdin: Data(text: "hunter2"), environment: key).status == 0)
        let result = try sandbox.run(["inspect", "pin"], environment: key)
        #expect(result.status == 0)
        #expect(result.stdoutText.contains("expires in 1 h 59 min") || result.stdoutText.contains("expires in 2 h"))
        #expect(result.stdoutText.contains("7 bytes, not previewed"))
        #expect(!result.stdoutText.contains("hunt"))
        let json = try #require(try JSONSerialization.jsonObject(with: sandbox.run(["inspect", "pin", "--json"], environment: key).stdout)
            as? [String: Any])
        #expect(json["preview"] is NSNull)
        #expect(json["jwt"] is NSNull)
        #expect((json["expiry"] as? String)?.hasPrefix("expires in") == true)
    }

    @Test func rmRemovesOnlyThatEntry() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        for name in ["a", "b"] { #expect(try sandbox.run(["add", name], stdin: Data(text: name), environment: key).status == 0) }
        #expect(try sandbox.run(["rm", "a"], environment: key).status == 0)
        #expect(try listJSON(sandbox, key).map { $0["name"] as? String } == ["b"])
        #expect(try sandbox.run(["rm", "a"], environment: key).status == 66)
    }

    // MARK: Helpers

    func listJSON(_ sandbox: CLISandbox, _ key: [String: String], extra: [String] = []) throws -> [[String: Any]] {
        let result = try sandbox.run(["list", "--json"] + extra, environment: key)
        #expect(result.status == 0, "\(result.stderrText)")
        return try #require(try JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]])
    }
}

/// Parses the CLI's RFC 3339 timestamps.
func parseRFC3339(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
}

/// Unpadded base64url of UTF-8 text.
func base64URL(_ text: String) -> String {
    Data(text.utf8).base64EncodedString()
        .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        .replacingOccurrences(of: "=", with: "")
}
