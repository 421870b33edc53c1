#if canImport(Glibc)
import Glibc
#endif
import CSystemdBus
import CredentialVault
import VaultCLI
import VaultCrypto

/// The Secret Service objects of one agent, served on its bus connection: the service, the
/// collections (the vault as `login`, the in-memory `session` and the ones CreateCollection makes),
/// their items, the sessions and the prompts. Every method arrives through one sd-bus fallback on
/// `/org/freedesktop/secrets` (`handle`) and runs on the bus thread; only a prompt's pinentry runs
/// elsewhere, its result handed back through `BusThread.enqueue`.
///
/// `@unchecked Sendable`: all its state is touched on the bus thread only (the closures handed to
/// other threads capture it to enqueue work back, never to touch it there).
final class SecretServiceProvider: @unchecked Sendable {
    let setup: SecretServiceSetup
    let connection: BusConnection
    let thread: BusThread
    let callers = BusCallers()
    let vault: VaultCollection
    var memory: [String: MemoryCollection] = ["session": MemoryCollection(id: "session", label: "Session")]
    var aliases: [String: String] = ["default": VaultCollection.id, "login": VaultCollection.id, "session": "session"]
    var sessions: [String: TransferSession] = [:]
    var prompts: [String: PendingPrompt] = [:]
    private var nextSession = 1
    private var nextPrompt = 1

    /// The most sessions and prompts open at once on the agent (a backstop: the caps per connection
    /// below are what a client meets, so one connection cannot take them all).
    static let maximumSessions = 4096
    static let maximumPrompts = 256
    /// The most sessions and prompts one connection (unique bus name) holds at once.
    static let maximumSessionsPerConnection = 64
    static let maximumPromptsPerConnection = 8
    /// The most alias names (the three fixed ones included).
    static let maximumAliases = 64
    /// The aliases that always name the same collection: SetAlias cannot move or remove them.
    static let fixedAliases: Set<String> = ["default", "login", "session"]
    /// The most bytes (labels, attributes, secrets) all in-memory collections hold together.
    static let maximumMemoryBytes = 64 << 20

    /// The interfaces' names.
    enum Interface {
        static let service = "org.freedesktop.Secret.Service"
        static let collection = "org.freedesktop.Secret.Collection"
        static let item = "org.freedesktop.Secret.Item"
        static let session = "org.freedesktop.Secret.Session"
        static let prompt = "org.freedesktop.Secret.Prompt"
        static let properties = "org.freedesktop.DBus.Properties"
        static let introspectable = "org.freedesktop.DBus.Introspectable"
    }

    /// One method call, read.
    struct Call {
        let message: OpaquePointer
        let sender: String
        let caller: AgentCaller
        let path: String
        let interface: String?
        let member: String
        let arguments: [BusValue]

        /// The arguments, checked against the method's input signature.
        func expect(_ signature: String) throws -> [BusValue] {
            let given = arguments.map(\.signature).joined()
            guard given == signature else {
                throw BusError.invalidArguments("\(member) takes (\(signature)), not (\(given))")
            }
            return arguments
        }
    }

    /// What a method answers, and what to do once the answer is sent.
    struct Answer {
        var values: [BusValue] = []
        var sensitive = false
        var after: (() -> Void)?
    }

    /// A prompt waiting for its owner to call Prompt or Dismiss.
    final class PendingPrompt {
        let path: String
        let owner: String
        /// The objects to report unlocked when it completes.
        let unlocking: [String]
        var running = false
        init(path: String, owner: String, unlocking: [String]) {
            self.path = path
            self.owner = owner
            self.unlocking = unlocking
        }
    }

    /// A collection, whichever kind.
    enum Collection {
        case vault(VaultCollection)
        case memory(MemoryCollection)

        var id: String {
            switch self {
            case .vault: VaultCollection.id
            case let .memory(collection): collection.id
            }
        }
        var path: String { SecretPaths.collection(id) }
    }

    init(setup: SecretServiceSetup, connection: BusConnection, thread: BusThread) {
        self.setup = setup
        self.connection = connection
        self.thread = thread
        vault = VaultCollection(directory: setup.directory, handler: setup.handler)
    }

    // MARK: Dispatch

    /// Answers a method call to a path outside /org/freedesktop/secrets with NoSuchObject, as
    /// gnome-keyring does (sd-bus's own answer, UnknownObject, is not what clients take for "no such
    /// item": secretstorage's `Item(connection, '/not/existing/path')` must raise ItemNotFoundException).
    /// Introspection there is left to sd-bus (the tree of nodes that leads to the service).
    func handleOutside(_ message: OpaquePointer) -> Bool {
        guard sd_bus_message_is_method_call(message, nil, nil) > 0,
              sd_bus_message_is_method_call(message, "org.freedesktop.DBus.Introspectable", nil) <= 0 else { return false }
        let path = sd_bus_message_get_path(message).map { String(cString: $0) } ?? ""
        connection.reply(to: message, error: .noSuchObject(path))
        return true
    }

    /// Answers one method call to a path under /org/freedesktop/secrets; always true (answered).
    func handle(_ message: OpaquePointer) -> Bool {
        guard sd_bus_message_is_method_call(message, nil, nil) > 0 else { return false }
        let path = sd_bus_message_get_path(message).map { String(cString: $0) } ?? ""
        let interface = sd_bus_message_get_interface(message).map { String(cString: $0) }
        let member = sd_bus_message_get_member(message).map { String(cString: $0) } ?? ""
        let sender = sd_bus_message_get_sender(message).map { String(cString: $0) } ?? ""
        // A call that carries a secret: sd-bus wipes the message's buffer when it is freed.
        if member == "CreateItem" || member == "SetSecret" { _ = sd_bus_message_sensitive(message) }
        let caller: AgentCaller
        switch callers.identity(of: sender, on: connection) {
        case let .caller(identified): caller = identified
        case let .refused(error):
            setup.log("refused a Secret Service call from \(sender): \(error.message)")
            connection.reply(to: message, error: error)
            return true
        }
        do {
            let arguments = try BusMessage.readBody(message)
            let call = Call(message: message, sender: sender, caller: caller, path: path, interface: interface, member: member,
                            arguments: arguments)
            let answer = try dispatch(call)
            try connection.reply(to: message, answer.values, sensitive: answer.sensitive)
            answer.after?()
        } catch {
            connection.reply(to: message, error: Self.busError(error, directory: setup.directory))
        }
        return true
    }

    private func dispatch(_ call: Call) throws -> Answer {
        guard let object = SecretPaths.parse(call.path) else { throw BusError.noSuchObject(call.path) }
        let interface = call.interface ?? defaultInterface(of: object, member: call.member)
        switch interface {
        case Interface.introspectable where call.member == "Introspect":
            return Answer(values: [.string(try introspect(object, call))])
        case Interface.properties:
            return try properties(call, object: object)
        default:
            break
        }
        switch object {
        case .service where interface == Interface.service:
            return try serviceMethod(call)
        case .collection, .alias:
            guard interface == Interface.collection else { break }
            return try collectionMethod(call, collection: try collection(for: object))
        case .item, .aliasItem:
            guard interface == Interface.item else { break }
            let (collection, name) = try item(for: object)
            return try itemMethod(call, collection: collection, name: name)
        case let .session(path) where interface == Interface.session:
            return try sessionMethod(call, path: path)
        case let .prompt(path) where interface == Interface.prompt:
            return try promptMethod(call, path: path)
        default:
            break
        }
        if case .folder = object { throw BusError.noSuchObject(call.path) }
        throw BusError.unknownMethod(interface, call.member)
    }

    /// The interface a call without one means: the object's own, else a standard one by member.
    private func defaultInterface(of object: SecretPaths.Object, member: String) -> String {
        switch member {
        case "Introspect": return Interface.introspectable
        case "Get", "GetAll", "Set": return Interface.properties
        default: break
        }
        return switch object {
        case .service: Interface.service
        case .collection, .alias: Interface.collection
        case .item, .aliasItem: Interface.item
        case .session: Interface.session
        case .prompt: Interface.prompt
        case .folder: ""
        }
    }

    // MARK: Objects

    /// The collection a collection path or alias names.
    func collection(for object: SecretPaths.Object) throws -> Collection {
        switch object {
        case let .collection(id): return try collection(id: id)
        case let .alias(alias):
            guard let id = aliases[alias] else { throw BusError.noSuchObject(SecretPaths.aliases + "/" + alias) }
            return try collection(id: id)
        default: throw BusError.noSuchObject("not a collection")
        }
    }

    /// The collection with path element `id`.
    func collection(id: String) throws -> Collection {
        if id == VaultCollection.id { return .vault(vault) }
        guard let found = memory[id] else { throw BusError.noSuchObject(SecretPaths.collection(id)) }
        return .memory(found)
    }

    /// The collection and item name an item path names (the item itself is not looked up).
    func item(for object: SecretPaths.Object) throws -> (Collection, String) {
        switch object {
        case let .item(id, name): return (try collection(id: id), name)
        case let .aliasItem(alias, name): return (try collection(for: .alias(alias)), name)
        default: throw BusError.noSuchObject("not an item")
        }
    }

    /// The item a path names, from a list of paths in a call (Unlock, GetSecrets).
    func item(atPath path: String) throws -> (Collection, String) {
        guard let object = SecretPaths.parse(path) else { throw BusError.noSuchObject(path) }
        return try item(for: object)
    }

    /// Every collection, the vault first.
    var allCollections: [Collection] {
        [.vault(vault)] + memory.keys.sorted().compactMap { memory[$0].map(Collection.memory) }
    }

    // MARK: Records and access

    /// The caller's rules for the items of `records` (throws AccessDenied while the rules file is unusable).
    func access(_ call: Call, records: [SecretItemRecord] = []) throws -> ItemAccess {
        let rules: AgentRules?
        do {
            rules = try setup.rules()
        } catch {
            throw BusError.accessDenied("the agent's rules file is unusable, so every request is refused: \(Self.describe(error))")
        }
        if rules != nil, !call.caller.identified {
            // No rule can be asked about a process not known to be the one on that connection (as for socket callers).
            setup.log("refused a Secret Service call to \(call.caller.description)")
            throw BusError.accessDenied("the agent could not identify the process on this bus connection (pid \(call.caller.pid)), "
                                        + "so its rules refuse it")
        }
        return ItemAccess(rules: rules, caller: call.caller, attributes: Dictionary(records.map { ($0.name, $0.attributes) },
                                                                                   uniquingKeysWith: { first, _ in first }), log: setup.log)
    }

    /// The entry name a collection's own changes are checked as (CreateCollection, Delete, its
    /// Label, SetAlias): `collection:ID`, of owner `secret-service`, with no attributes.
    static func collectionEntry(_ id: String) -> String { "collection:" + id }

    /// Checks a change of the collection `id` itself against the caller's rules (refused, as any
    /// request, to an unidentified caller when there are rules).
    func checkCollectionChange(_ operation: AgentOperation, _ id: String, _ call: Call) throws {
        try access(call).check(operation, entry: (Self.collectionEntry(id), VaultCollection.owner))
    }

    /// Checks an item's label and attributes against the vault's limits (`EntryValidation`: the
    /// label the entry would store, the attributes with the hidden exact label), in-memory items
    /// too, so a client cannot make the agent hold a label or attributes a vault would refuse.
    static func checkLimits(_ record: SecretItemRecord) throws {
        try EntryValidation.checkLabel(record.storedLabel)
        try EntryValidation.checkAttributes(record.storedAttributes)
    }

    /// Stores an item in an in-memory collection within `maximumMemoryBytes` across all of them.
    func putInMemory(_ memoryCollection: MemoryCollection, _ record: SecretItemRecord, secret: SecureBytes) throws {
        let total = memory.values.reduce(0) { $0 + $1.byteCount }
        let replaced = memoryCollection.items[record.name].map { MemoryCollection.byteCount($0.record, $0.secret) } ?? 0
        guard total - replaced + MemoryCollection.byteCount(record, secret) <= Self.maximumMemoryBytes else {
            throw BusError.failed("the in-memory collections hold the maximum of \(Self.maximumMemoryBytes >> 20) MiB: delete items first")
        }
        try memoryCollection.put(record, secret: secret)
    }

    /// The items of a collection the caller may list, and whether they are locked.
    func listedRecords(_ collection: Collection, _ call: Call) throws -> (records: [SecretItemRecord], locked: Bool) {
        let access = try access(call)
        switch collection {
        case .vault(let vault):
            let (records, locked) = try vault.records()
            return (records.filter { access.mayList(name: $0.name, owner: VaultCollection.owner, attributes: $0.attributes) }, locked)
        case .memory(let memory):
            return (memory.items.values.map(\.record).filter {
                access.mayList(name: $0.name, owner: VaultCollection.owner, attributes: $0.attributes)
            }, false)
        }
    }

    /// One item's record, if the caller may list it.
    /// - Throws: NoSuchObject when there is no such item (or the caller may not see it).
    func record(_ collection: Collection, _ name: String, _ call: Call) throws -> SecretItemRecord {
        guard let record = try listedRecords(collection, call).records.first(where: { $0.name == name }) else {
            throw BusError.noSuchObject(SecretPaths.item(collection.id, name))
        }
        return record
    }

    /// Whether the collection is locked now.
    func isLocked(_ collection: Collection) -> Bool {
        if case let .vault(vault) = collection { return vault.isLocked }
        return false
    }

    /// The session `path`, if `call`'s sender opened it.
    func session(_ path: String, for call: Call) throws -> TransferSession {
        guard let session = sessions[path] else { throw BusError.noSession("no session \(path): open one with OpenSession") }
        guard session.owner == call.sender else {
            throw BusError.noSession("the session \(path) belongs to another connection")
        }
        return session
    }

    /// Opens a session for `call`'s sender.
    func openSession(algorithm: String, input: BusValue, for call: Call) throws -> (BusValue, String) {
        guard sessions.values.filter({ $0.owner == call.sender }).count < Self.maximumSessionsPerConnection else {
            throw BusError.failed("this connection has the maximum of \(Self.maximumSessionsPerConnection) sessions open: close one first")
        }
        guard sessions.count < Self.maximumSessions else { throw BusError.failed("too many sessions are open") }
        let path = SecretPaths.sessions + "/\(nextSession)"
        let (output, session) = try TransferSession.open(algorithm: algorithm, input: input, path: path, owner: call.sender)
        nextSession += 1
        sessions[path] = session
        return (output, path)
    }

    /// Makes a prompt that unlocks the vault for `call`'s sender.
    func makePrompt(unlocking paths: [String], for call: Call) throws -> String {
        guard prompts.values.filter({ $0.owner == call.sender }).count < Self.maximumPromptsPerConnection else {
            throw BusError.failed("this connection has the maximum of \(Self.maximumPromptsPerConnection) prompts waiting: "
                                  + "complete or dismiss one first")
        }
        guard prompts.count < Self.maximumPrompts else { throw BusError.failed("too many prompts are waiting") }
        let path = SecretPaths.prompts + "/\(nextPrompt)"
        nextPrompt += 1
        prompts[path] = PendingPrompt(path: path, owner: call.sender, unlocking: paths)
        return path
    }

    /// A new item name: 16 random hex digits.
    func newItemName() throws -> String {
        try SecureRandom.bytes(count: 8).map { byte in
            let digits = Array("0123456789abcdef")
            return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0f)]])
        }.joined()
    }

    // MARK: Signals and bus events

    /// Emits a signal from `path`.
    func emit(_ path: String, _ interface: String, _ member: String, _ values: [BusValue]) {
        connection.emitSignal(path: path, interface: interface, member: member, values)
    }

    /// A connection left the bus: its identity, sessions and prompts go.
    func connectionLeft(_ name: String) {
        callers.forget(name)
        sessions = sessions.filter { $0.value.owner != name }
        prompts = prompts.filter { $0.value.owner != name }
    }

    // MARK: Errors

    /// The D-Bus error for what a method threw (never a value: VaultError messages hold none).
    static func busError(_ error: any Error, directory: String) -> BusError {
        if let error = error as? BusError { return error }
        guard let error = error as? VaultError else { return .failed("the request failed (\(type(of: error)))") }
        switch error.code {
        case .vaultLocked:
            return .isLocked("the vault \(directory) is locked: unlock it (Unlock, or 'vault unlock' in a terminal)")
        case .deniedByRule:
            return .accessDenied(error.message)
        case .notFound:
            return .noSuchObject(error.message)
        case .invalidInput:
            return .invalidArguments(describe(error))
        default:
            return .failed(describe(error))
        }
    }

    /// A VaultError's message and fix; anything else generically.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? VaultError else { return "the request failed" }
        return error.message + (error.fix.map { " (\($0))" } ?? "")
    }
}
