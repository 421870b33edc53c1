#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FoundationEssentials
import VaultCrypto

/// A client of the user's `vault agent`: asks it for entries of a vault it holds unlocked, so an app
/// (or a `vault` command) needs neither the passphrase nor the key. The key never leaves the agent.
///
/// Each call opens one connection (a Unix socket at `AgentSocketPath`), checks that the agent runs as
/// this user (`SO_PEERCRED`), sends one request and reads one answer, each within a deadline: a dead
/// or stuck agent gives `VaultError.Code.agentUnavailable`, never a hang. The session's own entries
/// (`ReservedEntryNames`: `session.*`) are refused to these calls (`.invalidInput`).
public struct VaultAgentClient: Sendable {
    /// The socket the agent listens on.
    public let socketPath: String

    /// How long an ordinary request may take.
    private static let requestTimeout = Duration.seconds(10)
    /// How long an unlock may take (it derives a key from a passphrase).
    private static let unlockTimeout = Duration.seconds(120)

    /// Whether every request says it is the session's own (`ReservedEntryNames.agentMarker`).
    private var marksSessionRequests = false

    /// A client for the agent at `socketPath`.
    public init(socketPath: String) {
        self.socketPath = socketPath
    }

    /// This client for the session's own reads and writes of its reserved entries (`session.*`),
    /// which the agent refuses to unmarked requests (`ReservedEntryNames`).
    package func forSession() -> VaultAgentClient {
        var client = self
        client.marksSessionRequests = true
        return client
    }

    /// The client for the user's agent, when one is configured and its socket is there; nil when
    /// `VAULT_AGENT_SOCK` and `XDG_RUNTIME_DIR` are both unset or no socket exists (no connection is tried).
    public static func forCurrentUser() -> VaultAgentClient? {
        guard let path = AgentSocketPath.resolve() else { return nil }
        var status = stat()
        guard lstat(path, &status) == 0 else { return nil }
        return VaultAgentClient(socketPath: path)
    }

    /// What the agent reports of itself: never a secret.
    public struct Status: Sendable, Equatable {
        /// One vault the agent holds unlocked.
        public struct UnlockedVault: Sendable, Equatable {
            /// The vault's directory (canonical path).
            public let directory: String
            /// When it was unlocked.
            public let unlockedAt: Date
            /// When the agent forgets its key unless used before (idle timeout), or at the latest (maximum lifetime).
            public let expiresAt: Date
        }
        /// The agent's process id.
        public let pid: Int32
        /// Its socket.
        public let socket: String
        /// The vaults it holds unlocked.
        public let vaults: [UnlockedVault]
    }

    /// The agent's status.
    public func status() throws -> Status {
        let answer = try request(["op": "status"])
        let vaults = (answer.header["vaults"]?.arrayValue ?? []).compactMap { vault -> Status.UnlockedVault? in
            guard let directory = vault["directory"]?.stringValue, let unlocked = vault["unlockedAtSeconds"]?.doubleValue,
                  let expires = vault["expiresAtSeconds"]?.doubleValue else { return nil }
            return Status.UnlockedVault(directory: directory, unlockedAt: Date(timeIntervalSince1970: unlocked),
                                        expiresAt: Date(timeIntervalSince1970: expires))
        }
        return Status(pid: Int32(answer.header["pid"]?.intValue ?? 0), socket: answer.header["socket"]?.stringValue ?? socketPath,
                      vaults: vaults)
    }

    /// Gives the agent the key of the vault in `directory`; the agent opens the vault with it (for a
    /// passphrase it derives the key itself) and keeps it until `lock`, a timeout or its exit.
    /// - Throws: `.wrongKey` when the key does not open the vault, `.notFound`, `.agentUnavailable`.
    public func unlock(directory: String, key: VaultKey) throws {
        let (kind, bytes): (String, SecureBytes) = switch key {
        case let .passphrase(bytes): ("passphrase", bytes)
        case let .keyMaterial(bytes): ("keyMaterial", bytes)
        }
        _ = try request(["op": "unlock", "directory": .string(try Self.canonical(directory)), "key": .string(kind), "secrets": 1],
                        secrets: [bytes], timeout: Self.unlockTimeout)
    }

    /// Makes the agent forget every key it holds.
    public func lock() throws {
        _ = try request(["op": "lock"])
    }

    /// The metadata of every entry (or of one owner's) of the vault in `directory`.
    public func list(directory: String, owner: String? = nil) throws -> [EntryMetadata] {
        var header: [String: JSONValue] = ["op": "list", "directory": .string(try Self.canonical(directory))]
        if let owner { header["owner"] = .string(owner) }
        let answer = try request(.object(header))
        return try (answer.header["entries"]?.arrayValue ?? []).map(Self.metadata(from:))
    }

    /// One entry with its secret.
    public func entry(named name: String, owner: String = "", directory: String) throws -> VaultEntry {
        let answer = try request(["op": "get", "directory": .string(try Self.canonical(directory)), "name": .string(name),
                                  "owner": .string(owner)])
        guard let metadata = answer.header["entry"], let secret = answer.secrets.first else {
            throw VaultError(.agentUnavailable, "the agent's answer had no entry")
        }
        return VaultEntry(metadata: try Self.metadata(from: metadata), secret: secret)
    }

    /// Stores entries in one transaction (all or none), replacing existing ones when `replace`.
    public func store(_ entries: [NewEntry], replace: Bool, directory: String) throws -> [EntryMetadata] {
        let descriptions: [JSONValue] = entries.map { entry in
            [
                "name": .string(entry.name), "owner": .string(entry.owner), "kind": .string(entry.kind.rawValue),
                "label": entry.label.map(JSONValue.string) ?? .null,
                "expiresAtSeconds": entry.expiresAt.map { .number($0.timeIntervalSince1970) } ?? .null,
                "transferable": .bool(entry.transferable),
            ]
        }
        let answer = try request(["op": "add", "directory": .string(try Self.canonical(directory)), "entries": .array(descriptions),
                                  "replace": .bool(replace), "secrets": .integer(Int128(entries.count))],
                                 secrets: entries.map(\.secret))
        return try (answer.header["entries"]?.arrayValue ?? []).map(Self.metadata(from:))
    }

    /// Removes one entry.
    public func remove(named name: String, owner: String = "", directory: String) throws {
        _ = try request(["op": "rm", "directory": .string(try Self.canonical(directory)), "name": .string(name), "owner": .string(owner)])
    }

    /// The entries of `owner` among `names`, read in one snapshot; names with no entry are left out.
    package func entries(named names: [String], owner: String, directory: String) throws -> [VaultEntry] {
        let answer = try request(["op": "get", "directory": .string(try Self.canonical(directory)),
                                  "names": .array(names.map(JSONValue.string)), "owner": .string(owner)])
        let described = answer.header["entries"]?.arrayValue ?? []
        guard described.count == answer.secrets.count else {
            throw VaultError(.agentUnavailable, "the agent's answer had entries without secrets")
        }
        return try zip(described, answer.secrets).map { VaultEntry(metadata: try Self.metadata(from: $0), secret: $1) }
    }

    /// Removes the entries of `owner` among `names` in one transaction (missing ones are skipped),
    /// with a new data key when `rotatingDataKey`.
    package func remove(names: [String], owner: String, rotatingDataKey: Bool, directory: String) throws {
        _ = try request(["op": "rm", "directory": .string(try Self.canonical(directory)), "names": .array(names.map(JSONValue.string)),
                         "owner": .string(owner), "rotateDataKey": .bool(rotatingDataKey)])
    }

    // MARK: The exchange

    /// Sends one request and returns the answer; an error answer is thrown as the `VaultError` it names.
    package func request(_ header: JSONValue, secrets: [SecureBytes] = [], timeout: Duration = requestTimeout) throws -> AgentMessage {
        var header = header
        if marksSessionRequests, case .object(var members) = header {
            members[ReservedEntryNames.agentMarker] = true
            header = .object(members)
        }
        let descriptor = try connect()
        defer { _ = close(descriptor) }
        let deadline = ContinuousClock.now + timeout
        let answer: AgentMessage?
        do {
            try AgentWire.send(AgentMessage(header, secrets: secrets), on: descriptor, deadline: deadline)
            answer = try AgentWire.receive(on: descriptor, deadline: deadline)
        } catch let failure as AgentWire.Failure {
            throw VaultError(.agentUnavailable, "the agent did not answer: \(failure.reason)", path: socketPath,
                             fix: "check that the agent runs, or do without it")
        }
        guard let answer else {
            throw VaultError(.agentUnavailable, "the agent closed the connection without an answer", path: socketPath)
        }
        if answer.header["ok"]?.boolValue == true { return answer }
        let code = answer.header["code"]?.stringValue.map(VaultError.Code.init(rawValue:)) ?? .agentUnavailable
        throw VaultError(code, answer.header["message"]?.stringValue ?? "the agent refused the request",
                         path: answer.header["path"]?.stringValue, fix: answer.header["fix"]?.stringValue)
    }

    /// Connects, and checks that the agent is this user.
    private func connect() throws -> Int32 {
        try AgentSocketPath.check(socketPath, socketMustExist: true)
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw VaultError.io("creating a socket", path: socketPath, errno: errno) }
        var address = AgentSocketPath.address(socketPath)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            _ = close(descriptor)
            throw VaultError(.agentUnavailable, "no agent answers: \(String(cString: strerror(code)))", path: socketPath,
                             fix: "start the agent")
        }
        guard let peer = AgentSocketPath.peerCredentials(descriptor), peer.uid == geteuid() else {
            _ = close(descriptor)
            throw VaultError(.insecurePermissions, "the process listening on the agent socket is not you", path: socketPath,
                             fix: "remove the socket and start your own agent")
        }
        return descriptor
    }

    /// The directory as the agent names it: its canonical path.
    package static func canonical(_ directory: String) throws -> String {
        guard let resolved = realpath(directory, nil) else {
            if errno == ENOENT { throw VaultError.vaultNotFound(path: directory) }
            throw VaultError.io("resolving the vault directory", path: directory, errno: errno)
        }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Entry metadata as the agent sends it.
    package static func metadataJSON(_ metadata: EntryMetadata) -> JSONValue {
        [
            "name": .string(metadata.name), "owner": .string(metadata.owner), "kind": .string(metadata.kind.rawValue),
            "label": metadata.label.map(JSONValue.string) ?? .null,
            "createdAtSeconds": .number(metadata.createdAt.timeIntervalSince1970),
            "updatedAtSeconds": .number(metadata.updatedAt.timeIntervalSince1970),
            "expiresAtSeconds": metadata.expiresAt.map { .number($0.timeIntervalSince1970) } ?? .null,
            "transferable": .bool(metadata.transferable), "secretBytes": .integer(Int128(metadata.secretByteCount)),
        ]
    }

    /// Entry metadata from the agent's JSON.
    package static func metadata(from json: JSONValue) throws -> EntryMetadata {
        guard let name = json["name"]?.stringValue, let owner = json["owner"]?.stringValue,
              let kind = json["kind"]?.stringValue.flatMap(EntryKind.init(rawValue:)),
              let created = json["createdAtSeconds"]?.doubleValue, let updated = json["updatedAtSeconds"]?.doubleValue,
              let size = json["secretBytes"]?.intValue else {
            throw VaultError(.agentUnavailable, "the agent sent malformed entry metadata")
        }
        return EntryMetadata(name: name, owner: owner, kind: kind, label: json["label"]?.stringValue,
                             createdAt: Date(timeIntervalSince1970: created), updatedAt: Date(timeIntervalSince1970: updated),
                             expiresAt: json["expiresAtSeconds"]?.doubleValue.map(Date.init(timeIntervalSince1970:)),
                             transferable: json["transferable"]?.boolValue ?? true, secretByteCount: size)
    }
}
