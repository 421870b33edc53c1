import Foundation
import Testing
import TestScheduling
import VaultCrypto
@testable import VaultCLI

/// `docker-credential-vault`, fed exactly what docker's client (docker-credential-helpers'
/// `client` package) writes: `store` gets the JSON encoding of the credentials with a final
/// newline, `get` and `erase` the bare server URL, `list` nothing.
@Suite(.blockingWork) struct DockerCredentialHelperTests {
    struct World {
        let sandbox: CLISandbox
        let key: [String: String]
        let helper: String

        init() throws {
            (sandbox, key) = try CLISandbox.withVault()
            let bin = sandbox.path("bin")
            try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
            helper = bin + "/docker-credential-vault"
            try FileManager.default.createSymbolicLink(atPath: helper, withDestinationPath: try CLIBinary.path())
        }

        @discardableResult
        func run(_ action: String, _ stdin: String, environment extra: [String: String]? = nil) throws -> CLIResult {
            try ExternalProcess.run(helper, [action], environment: extra ?? sandbox.environment.merging(key) { _, new in new },
                                    stdin: Data(stdin.utf8), timeout: 30)
        }
    }

    static let hub = "https://index.docker.io/v1/"

    @Test func storeGetListEraseRoundTrip() throws {
        let world = try World()
        defer { world.sandbox.cleanUp() }
        let store = try world.run("store", #"{"ServerURL":"https://index.docker.io/v1/","Username":"david","Secret":"passw0rd1"}"# + "\n")
        #expect(store.status == 0, "\(store.stdoutText)\(store.stderrText)")
        #expect(store.stdout.isEmpty)
        let get = try world.run("get", Self.hub)
        #expect(get.status == 0)
        #expect(get.stdoutText == #"{"ServerURL":"https://index.docker.io/v1/","Username":"david","Secret":"passw0rd1"}"# + "\n")
        let parsed = try JSONSerialization.jsonObject(with: get.stdout) as? [String: String]
        #expect(parsed?["Secret"] == "passw0rd1")

        try world.run("store", #"{"ServerURL":"registry.example.com:5000","Username":"<token>","Secret":"id-token"}"# + "\n")
        let list = try world.run("list", "")
        #expect(list.status == 0)
        let servers = try JSONSerialization.jsonObject(with: list.stdout) as? [String: String]
        #expect(servers == [Self.hub: "david", "registry.example.com:5000": "<token>"])
        #expect(!list.stdout.contains(Data(text: "passw0rd1")))

        let names = try world.sandbox.run(["list"], environment: world.key).stdoutText
        #expect(names.contains("docker:https://index.docker.io/v1/  password"))
        #expect(names.contains("docker:registry.example.com:5000    refreshToken"))

        #expect(try world.run("erase", Self.hub).status == 0)
        let gone = try world.run("get", Self.hub)
        #expect(gone.status == 1)
        #expect(gone.stdoutText == "credentials not found in native keychain\n")
        #expect(try world.run("get", "registry.example.com:5000").status == 0, "erase removed only its server")
    }

    @Test func dockersErrorTextsAreExact() throws {
        let world = try World()
        defer { world.sandbox.cleanUp() }
        let missing = try world.run("get", "https://never-stored.example/")
        #expect(missing.status == 1)
        #expect(missing.stdoutText == "credentials not found in native keychain\n")
        let eraseMissing = try world.run("erase", "https://never-stored.example/")
        #expect(eraseMissing.stdoutText == "credentials not found in native keychain\n")
        #expect(try world.run("get", "").stdoutText == "no credentials server URL\n")
        #expect(try world.run("store", #"{"Username":"u","Secret":"s"}"#).stdoutText == "no credentials server URL\n")
        #expect(try world.run("store", #"{"ServerURL":"https://x/","Secret":"s"}"#).stdoutText == "no credentials username\n")
        let unknown = try world.run("frobnicate", "")
        #expect(unknown.status == 1)
        #expect(unknown.stdoutText == "Unknown credential action `frobnicate`\n")
        let garbage = try world.run("store", "not json")
        #expect(garbage.status == 1)
        #expect(try world.sandbox.run(["list", "--json"], environment: world.key).stdoutText == "[]\n", "nothing stored")
    }

    @Test func withoutAKeyItFailsAtOnce() throws {
        let world = try World()
        defer { world.sandbox.cleanUp() }
        let result = try world.run("get", Self.hub, environment: world.sandbox.environment)
        #expect(result.status == 1)
        #expect(result.stdoutText.contains("no key for the vault"))
    }

    @Test func jsonEscapesRoundTrip() throws {
        let secret = "quote\" backslash\\ newline\n tab\t é 😀 \u{1}"
        let encoded = CredentialJSON.object([("Secret", SecureBytes(copying: Array(secret.utf8)))])
        let text = encoded.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
        #expect(!text.contains("\n"))
        #expect((try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String])?["Secret"] == secret)
        let parsed = try CredentialJSON.parseObject(encoded, secretKeys: ["Secret"])
        #expect(parsed.secrets["Secret"] == SecureBytes(copying: Array(secret.utf8)))
        let surrogate = try CredentialJSON.parseObject(SecureBytes(copying: Array(#"{"A":"\ud83d\ude00\u00e9"}"#.utf8)), secretKeys: [])
        #expect(surrogate.text["A"] == "😀é")
        for bad in [#"{"A":1}"#, #"{"A":"x""#, #"{"A":"\x"}"#, #"{"A":"x"} trailing"#, "[]"] {
            #expect(throws: (any Error).self) { try CredentialJSON.parseObject(SecureBytes(copying: Array(bad.utf8)), secretKeys: []) }
        }
    }

    /// `list` is machine output: JSON-escaped (a user name with U+2028, a C1 control and a bidi
    /// override stays valid JSON and reads back the same), never terminal-escaped; and a secret's
    /// trailing CR is kept.
    @Test func listIsValidJSONForAnyUserNameAndASecretKeepsItsCarriageReturn() throws {
        let world = try World()
        defer { world.sandbox.cleanUp() }
        let username = "al\u{2028}ice\u{85}\u{202E}"
        let request = try JSONSerialization.data(withJSONObject: ["ServerURL": "https://r.example", "Username": username, "Secret": "s3cr\r"])
        #expect(try world.run("store", String(decoding: request, as: UTF8.self)).status == 0)
        let list = try world.run("list", "")
        #expect(list.status == 0)
        let parsed = try #require(try JSONSerialization.jsonObject(with: list.stdout) as? [String: String], "\(list.stdoutText)")
        #expect(parsed == ["https://r.example": username])
        #expect(!list.stdoutText.contains("\\u{"), "no terminal escapes in JSON")
        let get = try world.run("get", "https://r.example")
        let answer = try #require(try JSONSerialization.jsonObject(with: get.stdout) as? [String: String])
        #expect(answer["Secret"] == "s3cr\r")
        #expect(answer["Username"] == username)
    }

    /// Issue 36 point 14: docker's JSON can carry a line feed or a NUL in the user name or the
    /// secret; the helper stores them and gives them back exactly (with `%` and an escape-looking
    /// `%41` untouched), and an ordinary credential is stored in the record format as before.
    @Test func aUserNameOrSecretWithLineFeedOrNULRoundTrips() throws {
        let world = try World()
        defer { world.sandbox.cleanUp() }
        let username = "first\nsecond\u{0}third %0A"
        let secret = "line1\nline2\u{0}end%41%%\r\n"
        let request = try JSONSerialization.data(withJSONObject: ["ServerURL": "https://r.example", "Username": username, "Secret": secret])
        let store = try world.run("store", String(decoding: request, as: UTF8.self))
        #expect(store.status == 0, "\(store.stdoutText)")
        let get = try world.run("get", "https://r.example")
        #expect(get.status == 0, "\(get.stdoutText)")
        let answer = try #require(try JSONSerialization.jsonObject(with: get.stdout) as? [String: String], "\(get.stdoutText)")
        #expect(answer == ["ServerURL": "https://r.example", "Username": username, "Secret": secret])
        let list = try #require(try JSONSerialization.jsonObject(with: try world.run("list", "").stdout) as? [String: String])
        #expect(list == ["https://r.example": username])

        #expect(try world.run("store", #"{"ServerURL":"https://plain.example","Username":"u","Secret":"p%41"}"#).status == 0)
        let plain = try world.sandbox.run(["get", "docker:https://plain.example"], environment: world.key)
        #expect(plain.stdoutText == "username=u\nsecret=p%41\n", "an ordinary record is unchanged")
    }
}
