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

    /// Whether every request is marked as the session's own (`AgentRequest.message(bySession:)`).
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
        /// The Secret Service it serves on the session bus (`vault agent --secret-service`); nil when none.
        public var secretService: SecretService? = nil

        /// What an agent serves on the session bus.
        public struct SecretService: Sendable, Equatable {
            /// The bus name it owns (`org.freedesktop.secrets`).
            public let busName: String
            /// The directory of the vault served as the collection behind the `default` alias.
            public let collection: String

            /// What an agent serves; every member as named.
            public init(busName: String, collection: String) {
                self.busName = busName
                self.collection = collection
            }
        }
    }

    /// The agent's status.
    public func status() throws -> Status {
        guard case let .status(status, _) = try exchange(.status) else { throw Self.unexpectedAnswer }
        return status
    }

    /// Gives the agent the key of the vault in `directory`; the agent opens the vault with it (for a
    /// passphrase it derives the key itself) and keeps it until `lock`, a timeout or its exit.
    /// - Throws: `.wrongKey` when the key does not open the vault, `.notFound`, `.agentUnavailable`.
    public func unlock(directory: String, key: VaultKey) throws {
        _ = try exchange(.unlock(directory: try Self.canonical(directory), key: key), timeout: Self.unlockTimeout)
    }

    /// Makes the agent forget every key it holds.
    public func lock() throws {
        _ = try exchange(.lock)
    }

    /// The metadata of every entry (or of one owner's) of the vault in `directory`.
    public func list(directory: String, owner: String? = nil) throws -> [EntryMetadata] {
        guard case let .metadata(entries) = try exchange(.list(directory: try Self.canonical(directory), owner: owner)) else {
            throw Self.unexpectedAnswer
        }
        return entries
    }

    /// One entry with its secret.
    public func entry(named name: String, owner: String = "", directory: String) throws -> VaultEntry {
        guard case let .entry(entry) = try exchange(.get(directory: try Self.canonical(directory), name: name, owner: owner)) else {
            throw Self.unexpectedAnswer
        }
        return entry
    }

    /// Stores entries in one transaction (all or none), replacing existing ones when `replace`.
    public func store(_ entries: [NewEntry], replace: Bool, directory: String) throws -> [EntryMetadata] {
        guard case let .metadata(stored) = try exchange(.add(directory: try Self.canonical(directory), entries: entries, replace: replace)) else {
            throw Self.unexpectedAnswer
        }
        // An agent started from a build before attributes ignores them; say so rather than lose them quietly.
        if stored.count == entries.count,
           zip(entries, stored).contains(where: { !$0.attributes.isEmpty && $1.attributes.isEmpty }) {
            throw VaultError(.agentUnavailable,
                             "the agent stored the entries without their attributes: it was started from an older release",
                             fix: "restart the agent from this release, then store the entries again")
        }
        return stored
    }

    /// Removes one entry.
    public func remove(named name: String, owner: String = "", directory: String) throws {
        _ = try exchange(.remove(directory: try Self.canonical(directory), name: name, owner: owner))
    }

    /// The entries of `owner` among `names`, read in one snapshot; names with no entry are left out.
    package func entries(named names: [String], owner: String, directory: String) throws -> [VaultEntry] {
        guard case let .entries(entries) = try exchange(.getSeveral(directory: try Self.canonical(directory), names: names, owner: owner)) else {
            throw Self.unexpectedAnswer
        }
        return entries
    }

    /// Removes the entries of `owner` among `names` in one transaction (missing ones are skipped),
    /// with a new data key when `rotatingDataKey`.
    package func remove(names: [String], owner: String, rotatingDataKey: Bool, directory: String) throws {
        _ = try exchange(.removeSeveral(directory: try Self.canonical(directory), names: names, owner: owner,
                                        rotatingDataKey: rotatingDataKey))
    }

    // MARK: The exchange

    /// Sends one request and returns the answer; an answer that refuses is thrown as the `VaultError` it carries.
    package func exchange(_ request: AgentRequest, timeout: Duration = requestTimeout) throws -> AgentResponse {
        let descriptor = try connect()
        defer { _ = close(descriptor) }
        let deadline = ContinuousClock.now + timeout
        let answer: AgentMessage?
        do {
            try AgentWire.send(request.message(bySession: marksSessionRequests), on: descriptor, deadline: deadline)
            answer = try AgentWire.receive(on: descriptor, deadline: deadline)
        } catch let failure as AgentWire.Failure {
            throw VaultError(.agentUnavailable, "the agent did not answer: \(failure.reason)", path: socketPath,
                             fix: "check that the agent runs, or do without it")
        }
        guard let answer else {
            throw VaultError(.agentUnavailable, "the agent closed the connection without an answer", path: socketPath)
        }
        let response = try AgentResponse.decode(answer, answering: request, socketPath: socketPath)
        if case let .refused(error) = response { throw error }
        return response
    }

    /// An answer of another kind than the request asks for (`AgentResponse.decode` never gives one).
    private static var unexpectedAnswer: VaultError {
        VaultError(.agentUnavailable, "the agent's answer does not fit the request")
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
}
