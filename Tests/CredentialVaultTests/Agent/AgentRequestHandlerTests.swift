import Foundation
import Synchronization
import Testing
@testable import CredentialVault
import VaultCrypto

/// What the agent does with a request (`AgentRequestHandler`), in process, on a real vault: one
/// method per request, the reserved names, the caller's rules, the key timeouts, and a malformed
/// request answered with its error.
@Suite struct AgentRequestHandlerTests {
    /// What was recorded, from any thread.
    final class Recorder<Item: Sendable>: Sendable {
        private let items = Mutex<[Item]>([])
        func add(_ item: Item) { items.withLock { $0.append(item) } }
        var all: [Item] { items.withLock { $0 } }
    }

    /// A vault with two entries, and a handler that opens it with the test options.
    struct World {
        let temp: TemporaryDirectory
        let directory: String
        let key: VaultKey
        let handler: AgentRequestHandler
        let events = Recorder<String>()

        init(idleTimeout: Duration = .seconds(900), maximumLifetime: Duration = .seconds(28_800)) throws {
            temp = try TemporaryDirectory()
            directory = temp.child("vault")
            key = try Fixtures.keyFile("alice.key", in: temp)
            let store = try SecretStore.create(in: directory, key: key, options: .testing())
            _ = try store.put(NewEntry(name: "api", secret: AgentProtocolTests.bytes("api-secret")))
            _ = try store.put(NewEntry(name: "session.oauth-client-secret", secret: AgentProtocolTests.bytes("client-secret")))
            let events = self.events
            handler = AgentRequestHandler(socketPath: "/run/test/agent.sock", idleTimeout: idleTimeout, maximumLifetime: maximumLifetime,
                                          log: { events.add($0) },
                                          open: { try SecretStore.open(in: $0, key: $1, options: .testing()) })
        }

        func unlock() throws {
            if case let .refused(error) = handler.answer(.unlock(directory: directory, key: key)) { throw error }
        }

        var logged: [String] { events.all }
    }

    /// The error of a refused answer, nil when it was served.
    static func refusal(_ response: AgentResponse) -> VaultError? {
        if case let .refused(error) = response { return error }
        return nil
    }

    @Test func eachRequestIsAnsweredOnTheUnlockedVault() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        let directory = world.directory
        #expect(Self.refusal(world.handler.answer(.get(directory: directory, name: "api", owner: "")))?.code == .vaultLocked)
        try world.unlock()
        #expect(world.logged == ["unlocked \(directory)"])

        guard case let .entry(entry) = world.handler.answer(.get(directory: directory, name: "api", owner: "")) else {
            Issue.record("get")
            return
        }
        #expect(entry.secret == AgentProtocolTests.bytes("api-secret"))

        let added = world.handler.answer(.add(directory: directory, entries: [
            NewEntry(name: "tok", owner: "u1", secret: AgentProtocolTests.bytes("t1"), kind: .accessToken),
            NewEntry(name: "ref", owner: "u1", secret: AgentProtocolTests.bytes("r1"), kind: .refreshToken),
        ], replace: false))
        guard case let .metadata(stored) = added else {
            Issue.record("add: \(added)")
            return
        }
        #expect(stored.map(\.name) == ["tok", "ref"])

        guard case let .entries(several) = world.handler.answer(.getSeveral(directory: directory, names: ["ref", "gone", "tok"], owner: "u1")) else {
            Issue.record("getSeveral")
            return
        }
        #expect(several.map(\.metadata.name) == ["ref", "tok"], "missing names are left out, the order kept")
        #expect(several.map(\.secret) == [AgentProtocolTests.bytes("r1"), AgentProtocolTests.bytes("t1")])

        guard case let .metadata(listed) = world.handler.answer(.list(directory: directory, owner: "u1")) else {
            Issue.record("list")
            return
        }
        #expect(Set(listed.map(\.name)) == ["tok", "ref"])

        guard case .done = world.handler.answer(.remove(directory: directory, name: "api", owner: "")) else {
            Issue.record("rm")
            return
        }
        #expect(Self.refusal(world.handler.answer(.get(directory: directory, name: "api", owner: "")))?.code == .notFound)

        guard case .done = world.handler.answer(.removeSeveral(directory: directory, names: ["tok", "ref", "gone"], owner: "u1",
                                                               rotatingDataKey: true)) else {
            Issue.record("rm of several")
            return
        }
        let reopened = try SecretStore.open(in: directory, key: world.key, options: .testing())
        #expect(try reopened.list(owner: "u1").isEmpty, "written to the vault file itself")

        guard case let .status(status, _) = world.handler.answer(.status) else {
            Issue.record("status")
            return
        }
        #expect(status.socket == "/run/test/agent.sock")
        #expect(status.pid == getpid())
        #expect(status.vaults.map(\.directory) == [directory])

        guard case .done = world.handler.answer(.lock) else {
            Issue.record("lock")
            return
        }
        #expect(Self.refusal(world.handler.answer(.list(directory: directory, owner: nil)))?.code == .vaultLocked)
        #expect(world.logged.last == "locked: forgot 1 vault key")
    }

    @Test func aKeyThatDoesNotOpenTheVaultIsRefusedAndNothingIsHeld() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        let wrong = VaultKey.keyMaterial(SecureBytes(copying: [UInt8](repeating: 1, count: 32)))
        #expect(Self.refusal(world.handler.answer(.unlock(directory: world.directory, key: wrong)))?.code == .wrongKey)
        guard case let .status(status, _) = world.handler.answer(.status) else {
            Issue.record("status")
            return
        }
        #expect(status.vaults.isEmpty)
    }

    @Test func reservedEntriesAreServedOnlyToTheSessionsMarkedRequests() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        try world.unlock()
        let directory = world.directory
        let plain: [AgentRequest] = [
            .get(directory: directory, name: "session.oauth-client-secret", owner: ""),
            .getSeveral(directory: directory, names: ["api", "session.oauth-client-secret"], owner: ""),
            .add(directory: directory, entries: [NewEntry(name: "session.oauth-client", secret: AgentProtocolTests.bytes("planted"))], replace: true),
            .remove(directory: directory, name: "session.oauth-client-secret", owner: ""),
            .removeSeveral(directory: directory, names: ["session.oauth-client-secret"], owner: "", rotatingDataKey: false),
            .get(directory: directory, name: "x", owner: SessionManager.pendingRevocationOwner),
        ]
        for request in plain {
            let error = Self.refusal(world.handler.answer(request))
            #expect(error?.code == .invalidInput && error?.message.contains("reserved") == true, "\(AgentProtocolTests.summary(request).text)")
        }
        guard case let .entry(entry) = world.handler.answer(.get(directory: directory, name: "session.oauth-client-secret", owner: ""),
                                                            bySession: true) else {
            Issue.record("the session's own request was refused")
            return
        }
        #expect(entry.secret == AgentProtocolTests.bytes("client-secret"))
    }

    /// Refuses get and rm of names starting with "private", and hides them from list; counts its uses.
    struct PrivateRule: AgentAccessPolicy {
        let asked = Recorder<String>()

        func check(_ operation: AgentOperation, entry: (name: String, owner: String)) throws {
            asked.add("\(operation) \(entry.name)")
            if entry.name.hasPrefix("private"), operation != .add {
                throw VaultError(.deniedByRule, "refused \(operation) of \(entry.name)")
            }
        }

        func lists(_ entry: (name: String, owner: String)) -> Bool {
            !entry.name.hasPrefix("private")
        }
    }

    @Test func theCallersRulesAreAskedAboutEveryEntry() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        try world.unlock()
        let directory = world.directory
        let rule = PrivateRule()
        #expect(Self.refusal(world.handler.answer(.add(directory: directory, entries: [NewEntry(name: "private-key", secret: AgentProtocolTests.bytes("k"))],
                                                       replace: false), policy: rule)) == nil)
        #expect(Self.refusal(world.handler.answer(.get(directory: directory, name: "private-key", owner: ""), policy: rule))?.code == .deniedByRule)
        #expect(Self.refusal(world.handler.answer(.getSeveral(directory: directory, names: ["api", "private-key"], owner: ""), policy: rule))?.code
                == .deniedByRule, "one refused name refuses the whole read")
        #expect(Self.refusal(world.handler.answer(.remove(directory: directory, name: "private-key", owner: ""), policy: rule))?.code == .deniedByRule)
        guard case let .metadata(listed) = world.handler.answer(.list(directory: directory, owner: nil), policy: rule) else {
            Issue.record("list")
            return
        }
        #expect(listed.map(\.name).sorted() == ["api", "session.oauth-client-secret"], "an entry the caller may not list is left out")
        #expect(rule.asked.all == ["add private-key", "get private-key", "get api", "get private-key", "rm private-key"])
        // The entry is still there: refused means untouched.
        let reopened = try SecretStore.open(in: directory, key: world.key, options: .testing())
        #expect(try reopened.entry(named: "private-key").secret == AgentProtocolTests.bytes("k"))
    }

    /// The message-level entry point the socket loop calls: decode, ask for the rules only for an
    /// entry request, answer, encode.
    @Test func aMessageIsDecodedAnsweredAndEncoded() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        let asked = Recorder<AgentOperation>()
        func send(_ request: AgentRequest, refuseAccess: Bool = false) throws -> AgentResponse {
            let answer = world.handler.answer(request.message()) { operation in
                asked.add(operation)
                if refuseAccess { throw VaultError(.deniedByRule, "the rules file is unusable") }
                return nil
            }
            return try AgentResponse.decode(AgentProtocolTests.overTheWire(answer), answering: request, socketPath: "/s")
        }
        _ = try send(.unlock(directory: world.directory, key: world.key))
        _ = try send(.status)
        _ = try send(.list(directory: world.directory, owner: nil))
        guard case let .entry(entry) = try send(.get(directory: world.directory, name: "api", owner: "")) else {
            Issue.record("get")
            return
        }
        #expect(entry.secret == AgentProtocolTests.bytes("api-secret"))
        #expect(Self.refusal(try send(.get(directory: world.directory, name: "api", owner: ""), refuseAccess: true))?.message
                == "the rules file is unusable")
        _ = try send(.lock)
        #expect(asked.all == [.list, .get, .get], "the rules are asked for entry requests only")

        // A malformed request is answered with its error, and the agent goes on.
        let malformed = world.handler.answer(AgentMessage(["op": "get", "directory": 5, "name": "api"])) { _ in
            Issue.record("the rules were asked about a request that could not be read")
            return nil
        }
        #expect(malformed.header["ok"] == false)
        #expect(malformed.header["code"] == "invalidInput")
        #expect(malformed.header["message"] == "the request's \"directory\" is not a string")
        let unknown = world.handler.answer(AgentMessage(["op": "frobnicate"])) { _ in nil }
        #expect(unknown.header["code"] == "invalidInput")
        guard case .status = try send(.status) else {
            Issue.record("status after malformed requests")
            return
        }
    }

    @Test func anUnusedKeyIsForgottenAfterTheIdleTimeout() throws {
        let world = try World(idleTimeout: .seconds(60), maximumLifetime: .seconds(600))
        defer { world.temp.cleanUp() }
        // Instants taken around the uses, so no delay of a loaded machine can change the outcome.
        let unlocked = ContinuousClock.now
        try world.unlock()
        world.handler.forgetExpiredKeys(at: unlocked + .seconds(50))
        #expect(Self.refusal(world.handler.answer(.get(directory: world.directory, name: "api", owner: ""))) == nil, "kept before the timeout")
        let lastUsed = ContinuousClock.now
        world.handler.forgetExpiredKeys(at: lastUsed + .seconds(61))
        #expect(Self.refusal(world.handler.answer(.get(directory: world.directory, name: "api", owner: "")))?.code == .vaultLocked)
        #expect(world.logged.last == "forgot \(world.directory): timed out")
    }

    @Test func aKeyInUseIsForgottenAtTheMaximumLifetime() throws {
        let world = try World(idleTimeout: .seconds(600), maximumLifetime: .seconds(60))
        defer { world.temp.cleanUp() }
        let unlocked = ContinuousClock.now
        try world.unlock()
        world.handler.forgetExpiredKeys(at: unlocked + .seconds(50))
        #expect(Self.refusal(world.handler.answer(.list(directory: world.directory, owner: nil))) == nil, "kept before the lifetime ends")
        // Just used, so far from its idle timeout: the lifetime alone ends it.
        world.handler.forgetExpiredKeys(at: .now + .seconds(61))
        #expect(Self.refusal(world.handler.answer(.list(directory: world.directory, owner: nil)))?.code == .vaultLocked)
    }

    /// `lock(directory:)` (the Secret Service's Lock) forgets that vault's key only; another vault
    /// the agent holds stays unlocked, and a vault it does not hold is reported as not held.
    @Test func lockingOneDirectoryKeepsTheOtherVaultsUnlocked() throws {
        let world = try World()
        defer { world.temp.cleanUp() }
        let other = world.temp.child("other")
        _ = try SecretStore.create(in: other, key: world.key, options: .testing())
        try world.unlock()
        if case let .refused(error) = world.handler.answer(.unlock(directory: other, key: world.key)) { throw error }
        #expect(world.handler.lock(directory: world.directory))
        #expect(Self.refusal(world.handler.answer(.list(directory: world.directory, owner: nil)))?.code == .vaultLocked)
        #expect(Self.refusal(world.handler.answer(.list(directory: other, owner: nil))) == nil, "the other vault stays unlocked")
        #expect(!world.handler.lock(directory: world.directory), "no longer held")
        #expect(world.logged.contains("locked \(world.directory)"))
    }
}
