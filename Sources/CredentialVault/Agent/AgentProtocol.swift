import FoundationEssentials
import VaultCrypto

// The agent's protocol: what a client asks (`AgentRequest`), what the agent answers
// (`AgentResponse`), and their encoding as `AgentMessage`s (a JSON header and raw secret frames,
// `AgentWire`). This file is the only place where the header's field names and operation names
// are spelled; the client (`VaultAgentClient`) and the agent (`AgentRequestHandler`) both use it.

/// An operation of the agent, as its requests name it and its rules file lists it.
package enum AgentOperation: String, Sendable, CaseIterable, CustomStringConvertible {
    /// What the agent holds.
    case status
    /// Take a vault's key.
    case unlock
    /// Forget every key.
    case lock
    /// The entries' metadata.
    case list
    /// Entries with their secrets.
    case get
    /// Store entries.
    case add
    /// Remove entries.
    case remove = "rm"

    /// Whether the operation concerns entries (the ones the agent's rules decide): get, list, add, rm.
    package var concernsEntries: Bool {
        switch self {
        case .list, .get, .add, .remove: true
        case .status, .unlock, .lock: false
        }
    }

    /// The operation's name in requests and in the rules file ("rm" for `remove`).
    package var description: String { rawValue }
}

/// One request to the agent.
package enum AgentRequest: Sendable {
    /// What the agent holds (`AgentResponse.status`).
    case status
    /// Open the vault in `directory` with `key` and keep it (`AgentResponse.done`).
    case unlock(directory: String, key: VaultKey)
    /// Forget every key (`.done`).
    case lock
    /// The metadata of the vault's entries, of one owner's when `owner` is given (`.metadata`).
    case list(directory: String, owner: String?)
    /// One entry with its secret (`.entry`).
    case get(directory: String, name: String, owner: String)
    /// The entries of `owner` among `names`, read in one snapshot; missing ones left out (`.entries`).
    case getSeveral(directory: String, names: [String], owner: String)
    /// Store entries in one transaction, replacing existing ones when `replace` (`.metadata`).
    case add(directory: String, entries: [NewEntry], replace: Bool)
    /// Remove one entry (`.done`).
    case remove(directory: String, name: String, owner: String)
    /// Remove the entries of `owner` among `names` in one transaction, missing ones skipped, with a
    /// new data key when `rotatingDataKey` (`.done`).
    case removeSeveral(directory: String, names: [String], owner: String, rotatingDataKey: Bool)

    /// The operation the request is, for the agent's rules.
    package var operation: AgentOperation {
        switch self {
        case .status: .status
        case .unlock: .unlock
        case .lock: .lock
        case .list: .list
        case .get, .getSeveral: .get
        case .add: .add
        case .remove, .removeSeveral: .remove
        }
    }
}

/// One answer of the agent.
package enum AgentResponse: Sendable {
    /// Done, nothing to report (unlock, lock, rm).
    case done
    /// The agent's status, and how many of its key buffers could not be locked in memory.
    case status(VaultAgentClient.Status, failedMemoryLocks: Int)
    /// Entries' metadata (list, add).
    case metadata([EntryMetadata])
    /// One entry with its secret (get).
    case entry(VaultEntry)
    /// Entries with their secrets (get of several names).
    case entries([VaultEntry])
    /// The request was refused, or failed: the error as the client throws it.
    case refused(VaultError)
}

// MARK: - Field names

/// The header's field names.
private enum Field {
    static let operation = "op"
    static let secretCount = "secrets"
    static let sessionMarker = "session"
    static let directory = "directory"
    static let key = "key"
    static let name = "name"
    static let names = "names"
    static let owner = "owner"
    static let entries = "entries"
    static let entry = "entry"
    static let replace = "replace"
    static let rotateDataKey = "rotateDataKey"
    static let ok = "ok"
    static let code = "code"
    static let message = "message"
    static let path = "path"
    static let fix = "fix"
    static let pid = "pid"
    static let socket = "socket"
    static let vaults = "vaults"
    static let failedMemoryLocks = "failedMemoryLocks"
    static let secretService = "secretService"
    static let busName = "busName"
    static let collection = "collection"
    static let unlockedAt = "unlockedAt"
    static let expiresAt = "expiresAt"
    static let unlockedAtSeconds = "unlockedAtSeconds"
    static let expiresAtSeconds = "expiresAtSeconds"
    static let kind = "kind"
    static let label = "label"
    static let createdAtSeconds = "createdAtSeconds"
    static let updatedAtSeconds = "updatedAtSeconds"
    static let transferable = "transferable"
    static let secretBytes = "secretBytes"
    static let attributes = "attributes"
}

/// How an unlock request names its key.
private enum KeyKind: String {
    case passphrase
    case keyMaterial
}

extension AgentMessage {
    /// How many raw frames follow a header: its `secrets` field, 0 when absent or not a number.
    package static func secretCount(announcedBy header: JSONValue) -> Int {
        header[Field.secretCount]?.intValue ?? 0
    }
}

// MARK: - Requests

extension AgentRequest {
    /// The message that carries this request.
    /// - Parameter bySession: marks the request as the session's own (its reserved entries,
    ///   `ReservedEntryNames`), which the agent refuses to unmarked requests.
    package func message(bySession: Bool = false) -> AgentMessage {
        var fields: [String: JSONValue] = [Field.operation: .string(operation.rawValue)]
        var secrets: [SecureBytes] = []
        switch self {
        case .status, .lock:
            break
        case let .unlock(directory, key):
            let (kind, bytes): (KeyKind, SecureBytes) = switch key {
            case let .passphrase(bytes): (.passphrase, bytes)
            case let .keyMaterial(bytes): (.keyMaterial, bytes)
            }
            fields[Field.directory] = .string(directory)
            fields[Field.key] = .string(kind.rawValue)
            secrets = [bytes]
        case let .list(directory, owner):
            fields[Field.directory] = .string(directory)
            if let owner { fields[Field.owner] = .string(owner) }
        case let .get(directory, name, owner), let .remove(directory, name, owner):
            fields[Field.directory] = .string(directory)
            fields[Field.name] = .string(name)
            fields[Field.owner] = .string(owner)
        case let .getSeveral(directory, names, owner):
            fields[Field.directory] = .string(directory)
            fields[Field.names] = .array(names.map(JSONValue.string))
            fields[Field.owner] = .string(owner)
        case let .add(directory, entries, replace):
            fields[Field.directory] = .string(directory)
            fields[Field.entries] = .array(entries.map(Self.description(of:)))
            fields[Field.replace] = .bool(replace)
            secrets = entries.map(\.secret)
        case let .removeSeveral(directory, names, owner, rotatingDataKey):
            fields[Field.directory] = .string(directory)
            fields[Field.names] = .array(names.map(JSONValue.string))
            fields[Field.owner] = .string(owner)
            fields[Field.rotateDataKey] = .bool(rotatingDataKey)
        }
        if !secrets.isEmpty || operation == .add { fields[Field.secretCount] = .integer(Int128(secrets.count)) }
        if bySession { fields[Field.sessionMarker] = true }
        return AgentMessage(.object(fields), secrets: secrets)
    }

    /// The request a message carries, and whether it is marked as the session's own.
    /// - Throws: `VaultError` `.invalidInput` saying what is missing or malformed (never a value).
    package static func decode(_ message: AgentMessage) throws -> (request: AgentRequest, bySession: Bool) {
        let header = RequestHeader(header: message.header)
        guard let operation = message.header[Field.operation]?.stringValue.flatMap(AgentOperation.init(rawValue:)) else {
            throw VaultError(.invalidInput, "the agent does not know this request")
        }
        let bySession = message.header[Field.sessionMarker]?.boolValue == true
        let request: AgentRequest
        switch operation {
        case .status:
            request = .status
        case .lock:
            request = .lock
        case .unlock:
            guard let directory = try header.optionalString(Field.directory), let bytes = message.secrets.first else {
                throw VaultError(.invalidInput, "an unlock request needs a directory and a key")
            }
            let kind: KeyKind
            switch try header.optionalString(Field.key) {
            case nil:
                kind = .passphrase   // the first clients named no kind: theirs was a passphrase
            case let name?:
                guard let known = KeyKind(rawValue: name) else {
                    throw VaultError(.invalidInput, "an unlock request names an unknown kind of key")
                }
                kind = known
            }
            request = .unlock(directory: directory, key: kind == .keyMaterial ? .keyMaterial(bytes) : .passphrase(bytes))
        case .list:
            request = .list(directory: try header.directory(), owner: try header.optionalString(Field.owner))
        case .get where message.header[Field.names] != nil:
            request = .getSeveral(directory: try header.directory(), names: try header.names(), owner: try header.owner())
        case .get:
            request = .get(directory: try header.directory(), name: try header.name(), owner: try header.owner())
        case .add:
            request = .add(directory: try header.directory(), entries: try header.newEntries(secrets: message.secrets),
                           replace: try header.optionalBool(Field.replace) ?? false)
        case .remove where message.header[Field.names] != nil:
            request = .removeSeveral(directory: try header.directory(), names: try header.names(), owner: try header.owner(),
                                     rotatingDataKey: try header.optionalBool(Field.rotateDataKey) ?? false)
        case .remove:
            request = .remove(directory: try header.directory(), name: try header.name(), owner: try header.owner())
        }
        return (request, bySession)
    }

    /// An entry to add, as the request describes it; `attributes` only when there are some, so an entry
    /// without them is described with the same bytes as before they existed.
    private static func description(of entry: NewEntry) -> JSONValue {
        var fields: [String: JSONValue] = [
            Field.name: .string(entry.name), Field.owner: .string(entry.owner), Field.kind: .string(entry.kind.rawValue),
            Field.label: entry.label.map(JSONValue.string) ?? .null,
            Field.expiresAtSeconds: entry.expiresAt.map { .number($0.timeIntervalSince1970) } ?? .null,
            Field.transferable: .bool(entry.transferable),
        ]
        if !entry.attributes.isEmpty { fields[Field.attributes] = attributesJSON(entry.attributes) }
        return .object(fields)
    }
}

/// Attributes as the agent's messages carry them: a JSON object of strings.
private func attributesJSON(_ attributes: [String: String]) -> JSONValue {
    .object(attributes.mapValues(JSONValue.string))
}

/// Attributes from a JSON object of strings; absent or null is none.
/// - Throws: `.invalidInput` when the field is another type or holds a non-string.
private func attributes(fromJSON value: JSONValue?) throws -> [String: String] {
    guard let value, !value.isNull else { return [:] }
    guard let object = value.objectValue else {
        throw VaultError(.invalidInput, "the \"\(Field.attributes)\" field is not an object")
    }
    var attributes: [String: String] = [:]
    for (name, member) in object {
        guard let text = member.stringValue else {
            throw VaultError(.invalidInput, "the \"\(Field.attributes)\" field holds a value that is not a string")
        }
        attributes[name] = text
    }
    return attributes
}

/// A request's header read field by field: a missing required field and a field of the wrong
/// type are each an `.invalidInput` error; an absent or null optional field is nil.
private struct RequestHeader {
    let header: JSONValue

    /// The most names in one request.
    static let maximumNames = 65_536

    func optionalString(_ field: String) throws -> String? {
        guard let value = header[field], !value.isNull else { return nil }
        guard let text = value.stringValue else { throw Self.wrongType(field, "a string") }
        return text
    }

    func optionalBool(_ field: String) throws -> Bool? {
        guard let value = header[field], !value.isNull else { return nil }
        guard let flag = value.boolValue else { throw Self.wrongType(field, "true or false") }
        return flag
    }

    func optionalNumber(_ field: String) throws -> Double? {
        guard let value = header[field], !value.isNull else { return nil }
        guard let number = value.doubleValue else { throw Self.wrongType(field, "a number") }
        return number
    }

    func directory() throws -> String {
        guard let directory = try optionalString(Field.directory) else { throw VaultError(.invalidInput, "the request names no vault") }
        return directory
    }

    func name() throws -> String {
        guard let name = try optionalString(Field.name) else { throw VaultError(.invalidInput, "the request names no entry") }
        return name
    }

    func owner() throws -> String {
        try optionalString(Field.owner) ?? ""
    }

    func names() throws -> [String] {
        let listed = header[Field.names]?.arrayValue ?? []
        let names = listed.compactMap(\.stringValue)
        guard !names.isEmpty, names.count == listed.count, names.count <= Self.maximumNames else {
            throw VaultError(.invalidInput, "the request's entry names are malformed")
        }
        return names
    }

    func newEntries(secrets: [SecureBytes]) throws -> [NewEntry] {
        guard let descriptions = header[Field.entries]?.arrayValue, descriptions.count == secrets.count else {
            throw VaultError(.invalidInput, "the request's entries and secrets do not match")
        }
        return try zip(descriptions, secrets).map { description, secret in
            let fields = RequestHeader(header: description)
            do {
                guard description.objectValue != nil, let name = try fields.optionalString(Field.name),
                      let kind = try fields.optionalString(Field.kind).flatMap(EntryKind.init(rawValue:)) else {
                    throw VaultError(.invalidInput, "an entry of the request is malformed")
                }
                return NewEntry(name: name, owner: try fields.owner(), secret: secret, kind: kind, label: try fields.optionalString(Field.label),
                                expiresAt: try fields.optionalNumber(Field.expiresAtSeconds).map(Date.init(timeIntervalSince1970:)),
                                transferable: try fields.optionalBool(Field.transferable) ?? true,
                                attributes: try attributes(fromJSON: description[Field.attributes]))
            } catch {
                throw VaultError(.invalidInput, "an entry of the request is malformed")
            }
        }
    }

    private static func wrongType(_ field: String, _ expected: String) -> VaultError {
        VaultError(.invalidInput, "the request's \"\(field)\" is not \(expected)")
    }
}

// MARK: - Responses

extension AgentResponse {
    /// The message that carries this answer.
    package var message: AgentMessage {
        switch self {
        case .done:
            return AgentMessage([Field.ok: true])
        case let .status(status, failedMemoryLocks):
            let vaults: [JSONValue] = status.vaults.map { vault in
                [
                    Field.directory: .string(vault.directory),
                    Field.unlockedAt: .string(ISO8601Timestamp.clampedString(from: vault.unlockedAt)),
                    Field.expiresAt: .string(ISO8601Timestamp.clampedString(from: vault.expiresAt)),
                    Field.unlockedAtSeconds: .number(vault.unlockedAt.timeIntervalSince1970),
                    Field.expiresAtSeconds: .number(vault.expiresAt.timeIntervalSince1970),
                ]
            }
            var fields: [String: JSONValue] = [Field.ok: true, Field.pid: .integer(Int128(status.pid)), Field.socket: .string(status.socket),
                                               Field.vaults: .array(vaults), Field.failedMemoryLocks: .integer(Int128(failedMemoryLocks))]
            // Only when serving, so an agent without it answers byte for byte as earlier agents do.
            if let served = status.secretService {
                fields[Field.secretService] = [Field.busName: .string(served.busName), Field.collection: .string(served.collection)]
            }
            return AgentMessage(.object(fields))
        case let .metadata(entries):
            return AgentMessage([Field.ok: true, Field.entries: .array(entries.map(Self.json(of:)))])
        case let .entry(entry):
            return AgentMessage([Field.ok: true, Field.entry: Self.json(of: entry.metadata), Field.secretCount: 1], secrets: [entry.secret])
        case let .entries(entries):
            return AgentMessage([Field.ok: true, Field.entries: .array(entries.map { Self.json(of: $0.metadata) }),
                                 Field.secretCount: .integer(Int128(entries.count))], secrets: entries.map(\.secret))
        case let .refused(error):
            return AgentMessage([Field.ok: false, Field.code: .string(error.code.rawValue), Field.message: .string(error.message),
                                 Field.path: error.path.map(JSONValue.string) ?? .null, Field.fix: error.fix.map(JSONValue.string) ?? .null])
        }
    }

    /// The answer a message carries, read as the answer to `request`.
    /// - Parameters:
    ///   - message: the agent's message.
    ///   - request: the request it answers (which tells what the answer holds).
    ///   - socketPath: the socket, for a status that does not name it.
    /// - Throws: `VaultError` `.agentUnavailable` when the answer is malformed.
    package static func decode(_ message: AgentMessage, answering request: AgentRequest, socketPath: String) throws -> AgentResponse {
        let header = message.header
        guard header[Field.ok]?.boolValue == true else {
            let code = header[Field.code]?.stringValue.map(VaultError.Code.init(rawValue:)) ?? .agentUnavailable
            return .refused(VaultError(code, header[Field.message]?.stringValue ?? "the agent refused the request",
                                       path: header[Field.path]?.stringValue, fix: header[Field.fix]?.stringValue))
        }
        switch request {
        case .status:
            // Read leniently: a status is how a client finds out whether an agent answers at all.
            let vaults = (header[Field.vaults]?.arrayValue ?? []).compactMap { vault -> VaultAgentClient.Status.UnlockedVault? in
                guard let directory = vault[Field.directory]?.stringValue, let unlocked = vault[Field.unlockedAtSeconds]?.doubleValue,
                      let expires = vault[Field.expiresAtSeconds]?.doubleValue else { return nil }
                return VaultAgentClient.Status.UnlockedVault(directory: directory, unlockedAt: Date(timeIntervalSince1970: unlocked),
                                                             expiresAt: Date(timeIntervalSince1970: expires))
            }
            let served = header[Field.secretService].flatMap { served -> VaultAgentClient.Status.SecretService? in
                guard let busName = served[Field.busName]?.stringValue, let collection = served[Field.collection]?.stringValue else { return nil }
                return VaultAgentClient.Status.SecretService(busName: busName, collection: collection)
            }
            let status = VaultAgentClient.Status(pid: Int32(truncatingIfNeeded: header[Field.pid]?.intValue ?? 0),
                                                 socket: header[Field.socket]?.stringValue ?? socketPath, vaults: vaults, secretService: served)
            return .status(status, failedMemoryLocks: header[Field.failedMemoryLocks]?.intValue ?? 0)
        case .unlock, .lock, .remove, .removeSeveral:
            return .done
        case .list, .add:
            return .metadata(try (header[Field.entries]?.arrayValue ?? []).map(metadata(from:)))
        case .get:
            guard let metadata = header[Field.entry], let secret = message.secrets.first else {
                throw VaultError(.agentUnavailable, "the agent's answer had no entry")
            }
            return .entry(VaultEntry(metadata: try Self.metadata(from: metadata), secret: secret))
        case .getSeveral:
            let described = header[Field.entries]?.arrayValue ?? []
            guard described.count == message.secrets.count else {
                throw VaultError(.agentUnavailable, "the agent's answer had entries without secrets")
            }
            return .entries(try zip(described, message.secrets).map { VaultEntry(metadata: try metadata(from: $0), secret: $1) })
        }
    }

    /// Entry metadata as the agent sends it (`attributes` only when there are some, as in requests).
    private static func json(of metadata: EntryMetadata) -> JSONValue {
        var fields: [String: JSONValue] = [
            Field.name: .string(metadata.name), Field.owner: .string(metadata.owner), Field.kind: .string(metadata.kind.rawValue),
            Field.label: metadata.label.map(JSONValue.string) ?? .null,
            Field.createdAtSeconds: .number(metadata.createdAt.timeIntervalSince1970),
            Field.updatedAtSeconds: .number(metadata.updatedAt.timeIntervalSince1970),
            Field.expiresAtSeconds: metadata.expiresAt.map { .number($0.timeIntervalSince1970) } ?? .null,
            Field.transferable: .bool(metadata.transferable), Field.secretBytes: .integer(Int128(metadata.secretByteCount)),
        ]
        if !metadata.attributes.isEmpty { fields[Field.attributes] = attributesJSON(metadata.attributes) }
        return .object(fields)
    }

    /// Entry metadata from the agent's JSON.
    private static func metadata(from json: JSONValue) throws -> EntryMetadata {
        guard let name = json[Field.name]?.stringValue, let owner = json[Field.owner]?.stringValue,
              let kind = json[Field.kind]?.stringValue.flatMap(EntryKind.init(rawValue:)),
              let created = json[Field.createdAtSeconds]?.doubleValue, let updated = json[Field.updatedAtSeconds]?.doubleValue,
              let size = json[Field.secretBytes]?.intValue else {
            throw VaultError(.agentUnavailable, "the agent sent malformed entry metadata")
        }
        return EntryMetadata(name: name, owner: owner, kind: kind, label: json[Field.label]?.stringValue,
                             createdAt: Date(timeIntervalSince1970: created), updatedAt: Date(timeIntervalSince1970: updated),
                             expiresAt: json[Field.expiresAtSeconds]?.doubleValue.map(Date.init(timeIntervalSince1970:)),
                             transferable: json[Field.transferable]?.boolValue ?? true, secretByteCount: size,
                             attributes: try agentAttributes(json[Field.attributes]))
    }

    /// The attributes of the agent's metadata; a malformed field is a malformed answer.
    private static func agentAttributes(_ value: JSONValue?) throws -> [String: String] {
        do {
            return try attributes(fromJSON: value)
        } catch {
            throw VaultError(.agentUnavailable, "the agent sent malformed entry metadata")
        }
    }
}
