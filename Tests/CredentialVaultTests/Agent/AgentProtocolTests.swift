#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// The agent's protocol (`AgentProtocol.swift`): every request and answer survives the wire
/// (`AgentWire` over a socket pair, secrets as raw frames), the headers are the ones agents and
/// clients have always sent (old and new keep talking), and every malformed request or answer
/// gets its own error.
@Suite struct AgentProtocolTests {
    static let directory = "/home/u/.local/share/vault"
    static let created = Date(timeIntervalSince1970: 1_800_000_000)

    static func bytes(_ text: String) -> SecureBytes { SecureBytes(copying: Array(text.utf8)) }

    /// Sends `message` through `AgentWire` on one end of a socket pair and reads it on the other.
    static func overTheWire(_ message: AgentMessage) throws -> AgentMessage {
        var ends: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { ends.forEach { _ = close($0) } }
        let deadline = ContinuousClock.now + .seconds(10)
        try AgentWire.send(message, on: ends[0], deadline: deadline)
        return try #require(try AgentWire.receive(on: ends[1], deadline: deadline))
    }

    /// A request as text (names, owners, flags, key kind) and its secrets, to compare two requests.
    static func summary(_ request: AgentRequest) -> (text: String, secrets: [SecureBytes]) {
        func entry(_ new: NewEntry) -> String {
            "\(new.owner)/\(new.name) \(new.kind) \(new.label ?? "-") \(new.expiresAt?.timeIntervalSince1970 ?? -1) \(new.transferable)"
        }
        switch request {
        case .status: return ("status", [])
        case .lock: return ("lock", [])
        case let .unlock(directory, .passphrase(bytes)): return ("unlock \(directory) passphrase", [bytes])
        case let .unlock(directory, .keyMaterial(bytes)): return ("unlock \(directory) keyMaterial", [bytes])
        case let .list(directory, owner): return ("list \(directory) \(owner ?? "<all>")", [])
        case let .get(directory, name, owner): return ("get \(directory) \(owner)/\(name)", [])
        case let .getSeveral(directory, names, owner): return ("getSeveral \(directory) \(owner) \(names)", [])
        case let .add(directory, entries, replace):
            return ("add \(directory) \(replace) \(entries.map(entry))", entries.map(\.secret))
        case let .remove(directory, name, owner): return ("remove \(directory) \(owner)/\(name)", [])
        case let .removeSeveral(directory, names, owner, rotate): return ("removeSeveral \(directory) \(owner) \(names) \(rotate)", [])
        }
    }

    /// Built anew for each use, never kept in a global: a `VaultKey` stores its case in the spare
    /// bits of its class reference, which LeakSanitizer does not read as a pointer, so a global
    /// holding one is reported as a leak at exit (scripts/sanitize, lsan.supp's note on the examples).
    static var everyRequest: [AgentRequest] { [
        .status,
        .lock,
        .unlock(directory: directory, key: .passphrase(bytes("correct horse"))),
        .unlock(directory: directory, key: .keyMaterial(SecureBytes(copying: [UInt8](repeating: 7, count: 32)))),
        .list(directory: directory, owner: nil),
        .list(directory: directory, owner: "alice"),
        .get(directory: directory, name: "api", owner: ""),
        .get(directory: directory, name: "session.tokens", owner: "u1"),
        .getSeveral(directory: directory, names: ["a", "b", "c"], owner: "u1"),
        .add(directory: directory, entries: [], replace: false),
        .add(directory: directory, entries: [
            NewEntry(name: "api", secret: bytes("s3cret\u{0}\n")),
            NewEntry(name: "tok", owner: "u1", secret: bytes("t"), kind: .accessToken, label: "a label",
                     expiresAt: Date(timeIntervalSince1970: 1_900_000_000.5), transferable: false),
        ], replace: true),
        .remove(directory: directory, name: "api", owner: ""),
        .removeSeveral(directory: directory, names: ["x"], owner: "u1", rotatingDataKey: true),
        .removeSeveral(directory: directory, names: ["x", "y"], owner: "", rotatingDataKey: false),
    ] }

    @Test func everyRequestRoundTripsOverTheWireWithAndWithoutTheSessionMarker() throws {
        for request in Self.everyRequest {
            for bySession in [false, true] {
                let received = try Self.overTheWire(request.message(bySession: bySession))
                let (decoded, marked) = try AgentRequest.decode(received)
                #expect(marked == bySession, "\(Self.summary(request).text)")
                #expect(Self.summary(decoded).text == Self.summary(request).text)
                #expect(Self.summary(decoded).secrets == Self.summary(request).secrets, "the secrets travel as raw frames, in order")
                #expect(decoded.operation == request.operation)
            }
        }
    }

    @Test func secretsNeverTravelInsideTheHeader() throws {
        let secret = "never-in-json-\(UUID().uuidString)"
        let requests: [AgentRequest] = [
            .unlock(directory: Self.directory, key: .passphrase(Self.bytes(secret))),
            .add(directory: Self.directory, entries: [NewEntry(name: "api", secret: Self.bytes(secret))], replace: false),
        ]
        for request in requests {
            let header = String(decoding: try request.message().header.serialized(), as: UTF8.self)
            #expect(!header.contains(secret))
        }
        let answer = AgentResponse.entry(VaultEntry(metadata: Self.metadata("api"), secret: Self.bytes(secret))).message
        #expect(!String(decoding: try answer.header.serialized(), as: UTF8.self).contains(secret))
    }

    /// The exact headers the client sent before the protocol was a type (taken from its code):
    /// a new agent decodes them, and a new client sends the same bytes.
    @Test func theHeadersAreTheOnesEarlierClientsAndAgentsSend() throws {
        let directory = JSONValue.string(Self.directory)
        let earlier: [(JSONValue, secrets: Int, AgentRequest)] = [
            (["op": "status"], 0, .status),
            (["op": "lock"], 0, .lock),
            (["op": "unlock", "directory": directory, "key": "passphrase", "secrets": 1], 1,
             .unlock(directory: Self.directory, key: .passphrase(Self.bytes("p")))),
            (["op": "unlock", "directory": directory, "key": "keyMaterial", "secrets": 1], 1,
             .unlock(directory: Self.directory, key: .keyMaterial(Self.bytes("k")))),
            (["op": "list", "directory": directory], 0, .list(directory: Self.directory, owner: nil)),
            (["op": "list", "directory": directory, "owner": "u1"], 0, .list(directory: Self.directory, owner: "u1")),
            (["op": "get", "directory": directory, "name": "api", "owner": ""], 0, .get(directory: Self.directory, name: "api", owner: "")),
            (["op": "get", "directory": directory, "names": ["a", "b"], "owner": "u1"], 0,
             .getSeveral(directory: Self.directory, names: ["a", "b"], owner: "u1")),
            (["op": "add", "directory": directory, "replace": true, "secrets": 1,
              "entries": [["name": "api", "owner": "", "kind": "generic", "label": nil, "expiresAtSeconds": nil, "transferable": true]]], 1,
             .add(directory: Self.directory, entries: [NewEntry(name: "api", secret: Self.bytes("s"))], replace: true)),
            (["op": "rm", "directory": directory, "name": "api", "owner": ""], 0, .remove(directory: Self.directory, name: "api", owner: "")),
            (["op": "rm", "directory": directory, "names": ["a"], "owner": "u1", "rotateDataKey": true], 0,
             .removeSeveral(directory: Self.directory, names: ["a"], owner: "u1", rotatingDataKey: true)),
        ]
        for (header, count, request) in earlier {
            let sent = request.message()
            #expect(try sent.header.serialized() == header.serialized(), "\(Self.summary(request).text)")
            #expect(sent.secrets.count == count)
            let decoded = try AgentRequest.decode(AgentMessage(header, secrets: Self.summary(request).secrets))
            #expect(Self.summary(decoded.request).text == Self.summary(request).text)
        }
        // The session's marker, as the session's client added it.
        var marked = try #require(AgentRequest.get(directory: Self.directory, name: "session.x", owner: "").message(bySession: true).header.objectValue)
        #expect(marked.removeValue(forKey: "session") == true)
        #expect(JSONValue.object(marked) == ["op": "get", "directory": directory, "name": "session.x", "owner": ""])
        // The earliest clients sent no key kind: a passphrase.
        let bare = try AgentRequest.decode(AgentMessage(["op": "unlock", "directory": directory, "secrets": 1], secrets: [Self.bytes("p")]))
        #expect(Self.summary(bare.request).text == "unlock \(Self.directory) passphrase")
    }

    static func metadata(_ name: String, owner: String = "", size: Int = 3) -> EntryMetadata {
        EntryMetadata(name: name, owner: owner, kind: .password, label: name == "api" ? "API" : nil, createdAt: created,
                      updatedAt: created.addingTimeInterval(60), expiresAt: name == "api" ? created.addingTimeInterval(3600) : nil,
                      transferable: name != "tok", secretByteCount: size)
    }

    /// The exact answers the agent sent before the protocol was a type (taken from its code).
    @Test func theAnswersAreTheOnesEarlierAgentsSend() throws {
        let api = Self.metadata("api")
        let earlierMetadata: JSONValue = [
            "name": "api", "owner": "", "kind": "password", "label": "API", "createdAtSeconds": .number(1_800_000_000),
            "updatedAtSeconds": .number(1_800_000_060), "expiresAtSeconds": .number(1_800_003_600), "transferable": true,
            "secretBytes": .integer(3),
        ]
        let status = VaultAgentClient.Status(pid: 77, socket: "/s", vaults: [
            .init(directory: "/a", unlockedAt: Self.created, expiresAt: Self.created.addingTimeInterval(900.25)),
        ])
        let earlier: [(JSONValue, AgentResponse)] = [
            (["ok": true], .done),
            (["ok": true, "pid": .integer(77), "socket": "/s", "failedMemoryLocks": .integer(2), "vaults": [[
                "directory": "/a", "unlockedAt": "2027-01-15T08:00:00.000Z", "expiresAt": "2027-01-15T08:15:00.250Z",
                "unlockedAtSeconds": .number(1_800_000_000), "expiresAtSeconds": .number(1_800_000_900.25),
            ]]], .status(status, failedMemoryLocks: 2)),
            (["ok": true, "entries": [earlierMetadata]], .metadata([api])),
            (["ok": true, "entry": earlierMetadata, "secrets": 1], .entry(VaultEntry(metadata: api, secret: Self.bytes("abc")))),
            (["ok": true, "entries": [earlierMetadata], "secrets": .integer(1)], .entries([VaultEntry(metadata: api, secret: Self.bytes("abc"))])),
            (["ok": true, "entries": [], "secrets": .integer(0)], .entries([])),
            (["ok": false, "code": "vaultLocked", "message": "locked", "path": "/a", "fix": nil], .refused(VaultError(.vaultLocked, "locked", path: "/a"))),
        ]
        for (header, response) in earlier {
            #expect(try response.message.header.serialized() == header.serialized(), "\(response)")
        }
    }

    @Test func everyAnswerRoundTripsOverTheWire() throws {
        let status = VaultAgentClient.Status(pid: 4242, socket: "/run/user/1000/vault/agent.sock", vaults: [
            .init(directory: "/a", unlockedAt: Self.created, expiresAt: Self.created.addingTimeInterval(900)),
            .init(directory: "/b", unlockedAt: Self.created.addingTimeInterval(1.5), expiresAt: Self.created.addingTimeInterval(28_800)),
        ])
        let cases: [(AgentResponse, AgentRequest)] = [
            (.done, .lock),
            (.done, .unlock(directory: "/a", key: .passphrase(Self.bytes("p")))),
            (.done, .remove(directory: "/a", name: "api", owner: "")),
            (.done, .removeSeveral(directory: "/a", names: ["x"], owner: "u", rotatingDataKey: true)),
            (.status(status, failedMemoryLocks: 3), .status),
            (.metadata([]), .list(directory: "/a", owner: nil)),
            (.metadata([Self.metadata("api"), Self.metadata("tok", owner: "u1")]), .list(directory: "/a", owner: nil)),
            (.metadata([Self.metadata("api")]), .add(directory: "/a", entries: [], replace: false)),
            (.entry(VaultEntry(metadata: Self.metadata("api"), secret: Self.bytes("abc"))), .get(directory: "/a", name: "api", owner: "")),
            (.entries([]), .getSeveral(directory: "/a", names: ["x"], owner: "u")),
            (.entries([VaultEntry(metadata: Self.metadata("a"), secret: Self.bytes("one")),
                       VaultEntry(metadata: Self.metadata("b"), secret: Self.bytes("two\u{0}"))]), .getSeveral(directory: "/a", names: ["a", "b"], owner: "")),
            (.refused(VaultError(.vaultLocked, "the agent does not hold this vault unlocked", path: "/a")), .get(directory: "/a", name: "api", owner: "")),
            (.refused(VaultError(.deniedByRule, "rule 1 refuses", fix: "change the rules")), .list(directory: "/a", owner: nil)),
        ]
        for (response, request) in cases {
            let received = try Self.overTheWire(response.message)
            let decoded = try AgentResponse.decode(received, answering: request, socketPath: "/elsewhere")
            switch (response, decoded) {
            case (.done, .done):
                break
            case let (.status(sent, sentLocks), .status(got, gotLocks)):
                #expect(got == sent)
                #expect(gotLocks == sentLocks)
                let vault = try #require(received.header["vaults"]?[0])
                #expect(vault["unlockedAt"] == "2027-01-15T08:00:00.000Z", "the RFC 3339 times stay for older clients")
                #expect(vault["expiresAt"] == "2027-01-15T08:15:00.000Z")
            case let (.metadata(sent), .metadata(got)):
                #expect(got == sent)
            case let (.entry(sent), .entry(got)):
                #expect(got.metadata == sent.metadata)
                #expect(got.secret == sent.secret)
            case let (.entries(sent), .entries(got)):
                #expect(got.map(\.metadata) == sent.map(\.metadata))
                #expect(got.map(\.secret) == sent.map(\.secret))
            case let (.refused(sent), .refused(got)):
                #expect(got.code == sent.code && got.message == sent.message && got.path == sent.path && got.fix == sent.fix)
            default:
                Issue.record("\(response) came back as \(decoded)")
            }
        }
    }

    // MARK: Malformed

    /// Decodes `header` (with `secrets` frames) and returns the error's message; records an issue
    /// when it decodes or fails with another code than `.invalidInput`.
    static func refusal(_ header: JSONValue, secrets: Int = 0) -> String? {
        do {
            let decoded = try AgentRequest.decode(AgentMessage(header, secrets: (0..<secrets).map { _ in bytes("s") }))
            Issue.record("decoded \(header) as \(summary(decoded.request).text)")
            return nil
        } catch let error as VaultError {
            #expect(error.code == .invalidInput, "\(header): \(error)")
            return error.message
        } catch {
            Issue.record("\(header): \(error)")
            return nil
        }
    }

    @Test func anUnknownMissingOrMistypedOperationIsAnInvalidRequest() {
        for header: JSONValue in [[:], ["op": "frobnicate"], ["op": 1], ["op": nil], ["op": ["get"]], ["OP": "get"], ["op": "Get"],
                                  ["directory": "/a", "name": "x"], "get", ["get"], nil] {
            #expect(Self.refusal(header) == "the agent does not know this request")
        }
    }

    @Test func missingFieldsEachGiveTheirError() {
        #expect(Self.refusal(["op": "get", "name": "api"]) == "the request names no vault")
        #expect(Self.refusal(["op": "list"]) == "the request names no vault")
        #expect(Self.refusal(["op": "rm", "name": "api", "owner": ""]) == "the request names no vault")
        #expect(Self.refusal(["op": "get", "directory": "/a"]) == "the request names no entry")
        #expect(Self.refusal(["op": "rm", "directory": "/a", "owner": "u"]) == "the request names no entry")
        #expect(Self.refusal(["op": "unlock", "directory": "/a", "key": "passphrase"]) == "an unlock request needs a directory and a key")
        #expect(Self.refusal(["op": "unlock", "key": "passphrase", "secrets": 1], secrets: 1) == "an unlock request needs a directory and a key")
        #expect(Self.refusal(["op": "add", "directory": "/a", "secrets": 1], secrets: 1) == "the request's entries and secrets do not match")
        #expect(Self.refusal(["op": "add", "directory": "/a", "entries": [["name": "a", "kind": "generic"]]])
                == "the request's entries and secrets do not match")
        #expect(Self.refusal(["op": "add", "directory": "/a", "entries": [["kind": "generic"]], "secrets": 1], secrets: 1)
                == "an entry of the request is malformed")
        #expect(Self.refusal(["op": "add", "directory": "/a", "entries": [["name": "a"]], "secrets": 1], secrets: 1)
                == "an entry of the request is malformed")
    }

    @Test func fieldsOfTheWrongTypeEachGiveTheirError() {
        #expect(Self.refusal(["op": "get", "directory": 5, "name": "api"]) == "the request's \"directory\" is not a string")
        #expect(Self.refusal(["op": "get", "directory": "/a", "name": ["api"]]) == "the request's \"name\" is not a string")
        #expect(Self.refusal(["op": "get", "directory": "/a", "name": "api", "owner": 5]) == "the request's \"owner\" is not a string")
        #expect(Self.refusal(["op": "list", "directory": "/a", "owner": true]) == "the request's \"owner\" is not a string")
        #expect(Self.refusal(["op": "add", "directory": "/a", "entries": [], "replace": "yes"]) == "the request's \"replace\" is not true or false")
        #expect(Self.refusal(["op": "rm", "directory": "/a", "names": ["a"], "rotateDataKey": 1])
                == "the request's \"rotateDataKey\" is not true or false")
        #expect(Self.refusal(["op": "unlock", "directory": "/a", "key": 1, "secrets": 1], secrets: 1) == "the request's \"key\" is not a string")
        #expect(Self.refusal(["op": "unlock", "directory": "/a", "key": "rot13", "secrets": 1], secrets: 1)
                == "an unlock request names an unknown kind of key")
        for names: JSONValue in [[], [1], ["a", nil], "a", [:]] {
            #expect(Self.refusal(["op": "get", "directory": "/a", "names": names]) == "the request's entry names are malformed")
            #expect(Self.refusal(["op": "rm", "directory": "/a", "names": names]) == "the request's entry names are malformed")
        }
        let tooMany = JSONValue.array(Array(repeating: "n", count: 65_537))
        #expect(Self.refusal(["op": "get", "directory": "/a", "names": tooMany]) == "the request's entry names are malformed")
        for entry: JSONValue in [["name": "a", "kind": "spell"], ["name": 1, "kind": "generic"], ["name": "a", "kind": "generic", "owner": 1],
                                 ["name": "a", "kind": "generic", "label": 1], ["name": "a", "kind": "generic", "expiresAtSeconds": "soon"],
                                 ["name": "a", "kind": "generic", "transferable": "no"], "a", ["a"]] {
            #expect(Self.refusal(["op": "add", "directory": "/a", "entries": [entry], "secrets": 1], secrets: 1) == "an entry of the request is malformed")
        }
        #expect(Self.refusal(["op": "add", "directory": "/a", "entries": "a", "secrets": 0]) == "the request's entries and secrets do not match")
    }

    @Test func optionalFieldsMayBeAbsentOrNull() throws {
        let get = try AgentRequest.decode(AgentMessage(["op": "get", "directory": "/a", "name": "api", "owner": nil]))
        #expect(Self.summary(get.request).text == "get /a /api")
        #expect(!get.bySession)
        let add = try AgentRequest.decode(AgentMessage(["op": "add", "directory": "/a", "entries": [["name": "a", "kind": "password"]], "secrets": 1],
                                                       secrets: [Self.bytes("s")]))
        #expect(Self.summary(add.request).text == "add /a false [\"/a password - -1.0 true\"]")
        // A marker that is not `true` does not mark.
        #expect(try !AgentRequest.decode(AgentMessage(["op": "status", "session": "yes"])).bySession)
    }

    @Test func aMalformedAnswerIsTheAgentsFailure() {
        func failure(_ header: JSONValue, secrets: Int = 0, answering request: AgentRequest) -> VaultError.Code? {
            do {
                let decoded = try AgentResponse.decode(AgentMessage(header, secrets: (0..<secrets).map { _ in Self.bytes("s") }),
                                                       answering: request, socketPath: "/s")
                if case let .refused(error) = decoded { return error.code }
                Issue.record("decoded \(header) as \(decoded)")
                return nil
            } catch let error as VaultError {
                return error.code
            } catch {
                return nil
            }
        }
        let get = AgentRequest.get(directory: "/a", name: "api", owner: "")
        #expect(failure(["ok": true], answering: get) == .agentUnavailable, "an entry answer without its entry")
        #expect(failure(["ok": true, "entry": ["name": "api"], "secrets": 1], secrets: 1, answering: get) == .agentUnavailable)
        #expect(failure(["ok": true, "entries": [["name": "a"]]], answering: .getSeveral(directory: "/a", names: ["a"], owner: ""))
                == .agentUnavailable, "entries without secrets")
        #expect(failure(["ok": true, "entries": [1]], answering: .list(directory: "/a", owner: nil)) == .agentUnavailable)
        #expect(failure(["ok": false], answering: .lock) == .agentUnavailable, "a refusal without a code")
        #expect(failure(["ok": "true", "code": "busy"], answering: .lock) == .busy, "only ok: true is success")
    }
}
