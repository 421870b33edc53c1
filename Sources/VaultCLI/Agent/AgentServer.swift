#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault
import FoundationEssentials
import Synchronization

// The write end of the agent's wake-up pipe, for its signal handler (a handler can reach only
// globals; an atomic word, so no lock is needed). -1 when no agent runs in this process.
private let wakeUpDescriptor = Atomic<Int32>(-1)

/// SIGTERM, SIGINT, SIGHUP: wake the accept loop, which then forgets every key and exits.
/// Async-signal-safe: an atomic load and write(2).
private func requestStop(_ signal: Int32) {
    let descriptor = wakeUpDescriptor.load(ordering: .sequentiallyConsistent)
    guard descriptor >= 0 else { return }
    var byte: UInt8 = 1
    _ = write(descriptor, &byte, 1)
}

/// `vault agent`: holds unlocked vault files and answers entry requests on a Unix socket, so that
/// commands (and apps, through `VaultAgentClient`) need neither the passphrase nor the key.
///
/// This is the agent's socket side; what it does with a request (the vaults it holds, their
/// timeouts, the answers) is the library's `AgentRequestHandler`, asked with the rules that apply
/// to the caller (`AgentRules`, `AgentCaller`). One thread accepts; each connection is served on a
/// thread of its own (a pthread, not a Dispatch work item: a connection blocks while it waits for
/// its client, which would starve Dispatch's pool) (at most `maximumConnections`; more are closed
/// at once), one request at a time, and closed after `connectionIdleTimeout` without a request.
/// Every peer must be this user (`SO_PEERCRED`).
final class AgentServer: @unchecked Sendable {
    // @unchecked: `rules` and `connections` are behind their Mutexes, `handler` is Sendable;
    // everything else is set in init and not changed (the descriptors are closed only by `run`
    // after the loop, when no connection is served).

    let socketPath: String
    /// The vaults held and the answers to requests.
    let handler: AgentRequestHandler
    private let listener: Int32
    private let ownsSocketFile: Bool
    private let wakeUp: (read: Int32, write: Int32)
    /// The rules file's path, and what was read from it (re-read when the file changes).
    private let rulesPath: String?
    private let rules = Mutex(RulesState())
    /// Every open connection, with when it became idle (nil while a request is being answered).
    private let connections = Mutex<[Int32: ContinuousClock.Instant?]>([:])
    /// The Secret Service provider, while it runs (`vault agent --secret-service`).
    private let secretService = Mutex<(any RunningSecretService)?>(nil)

    /// The most connections served at once.
    static let maximumConnections = 64
    /// A connection without a request for this long is closed.
    static let connectionIdleTimeout = Duration.seconds(30)
    /// How long writing an answer may take.
    static let answerTimeout = Duration.seconds(10)

    /// Binds the socket (or takes the one systemd passed: `LISTEN_FDS`).
    /// - Parameter environment: the command's environment (socket activation, the rules file's folder).
    /// - Throws: `.alreadyExists` when an agent already answers there; the socket checks' errors.
    init(socketPath: String, idleTimeout: Duration, maximumLifetime: Duration, environment: CommandEnvironment) throws {
        self.socketPath = socketPath
        handler = AgentRequestHandler(socketPath: socketPath, idleTimeout: idleTimeout, maximumLifetime: maximumLifetime,
                                      log: { AgentLog.write($0) }, audit: AgentAudit(xdgStateHome: environment[.xdgStateHome], home: environment[.home]))
        if let activated = Self.activatedSocket(environment) {
            listener = activated
            ownsSocketFile = false
        } else {
            listener = try Self.bind(socketPath)
            ownsSocketFile = true
        }
        rulesPath = AgentRules.path(environment)
        if let rulesPath {
            // A rules file that cannot be used stops the start: better no agent than one without its rules.
            let loaded = try AgentRules.load(rulesPath)
            rules.withLock { $0 = RulesState(signature: Self.signature(of: rulesPath), rules: loaded, error: nil, hadRules: loaded != nil) }
        }
        var ends: [Int32] = [-1, -1]
        guard Subprocess.makePipe(&ends) else { throw VaultError.io("creating the agent's wake-up pipe", path: nil, errno: errno) }
        wakeUp = (ends[0], ends[1])
    }

    /// The listening socket systemd passed (socket activation), if any: fd 3 when `LISTEN_PID` is this process.
    private static func activatedSocket(_ environment: CommandEnvironment) -> Int32? {
        guard let pid = environment[.listenPID].flatMap(Int32.init), pid == getpid(),
              let count = environment[.listenFDs].flatMap(Int.init), count >= 1 else { return nil }
        unsetenv("LISTEN_PID")
        unsetenv("LISTEN_FDS")
        unsetenv("LISTEN_FDNAMES")
        _ = fcntl(3, F_SETFD, FD_CLOEXEC)
        return 3
    }

    /// Makes the socket's folder when missing, refuses a live agent, removes a stale socket, binds 0600.
    private static func bind(_ path: String) throws -> Int32 {
        try makeFolder(of: path)
        try AgentSocketPath.check(path, socketMustExist: false)
        var status = stat()
        if lstat(path, &status) == 0 {
            // A socket is there: another agent, or one that died. Only a dead one's is removed.
            if (try? VaultAgentClient(socketPath: path).status()) != nil {
                throw VaultError(.alreadyExists, "an agent already answers on this socket", path: path)
            }
            guard unlink(path) == 0 else { throw VaultError.io("removing a stale agent socket", path: path, errno: errno) }
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw VaultError.io("creating the agent socket", path: path, errno: errno) }
        var address = AgentSocketPath.address(path)
        let previousMask = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        umask(previousMask)
        guard bound == 0, listen(descriptor, 128) == 0 else {
            let code = errno
            _ = close(descriptor)
            throw VaultError.io("listening on the agent socket", path: path, errno: code)
        }
        return descriptor
    }

    /// Makes the socket's folder 0700 when it is missing (`$XDG_RUNTIME_DIR/vault`, or the folder
    /// `$VAULT_AGENT_SOCK` names): only that last component, in a parent that exists and that no
    /// other user can rearrange (root's or the user's, not writable by others unless sticky). An
    /// existing folder is checked by `AgentSocketPath.check`, never repaired.
    private static func makeFolder(of path: String) throws {
        let folder = PathText.parent(of: path), parent = PathText.parent(of: folder)
        var status = stat()
        guard lstat(folder, &status) != 0, errno == ENOENT else { return }
        guard stat(parent, &status) == 0, status.st_mode & S_IFMT == S_IFDIR else {
            throw VaultError(.notFound, "the agent's socket folder cannot be made: the folder above it does not exist", path: parent,
                             fix: "make it first (mkdir -p -m 700 '\(folder)'), or choose another VAULT_AGENT_SOCK")
        }
        guard status.st_uid == geteuid() || status.st_uid == 0,
              status.st_mode & 0o022 == 0 || status.st_mode & S_ISVTX != 0 else {
            throw VaultError(.insecurePermissions, "refusing to make the agent's socket folder where others can rearrange it", path: parent,
                             fix: "choose a VAULT_AGENT_SOCK under a folder of your own")
        }
        if mkdir(folder, 0o700) != 0, errno != EEXIST {
            throw VaultError.io("creating the agent's folder", path: folder, errno: errno)
        }
    }

    /// Starts the Secret Service provider over this agent's vaults, answers and rules: it owns
    /// `org.freedesktop.secrets` once this returns. Called after the socket is bound, before `run`.
    /// On failure the socket is closed and removed (the agent does not start).
    /// - Parameters:
    ///   - support: the provider (`vault-secret-service`).
    ///   - directory: the vault served as the default collection.
    ///   - replace: take the name from the program that owns it.
    ///   - environment: the command's environment.
    /// - Throws: the provider's error: `.alreadyExists` (the name is owned, no `--replace`),
    ///   `.busUnavailable` (no session bus).
    func startSecretService(_ support: any SecretServiceCommandSupport, directory: String, replace: Bool,
                            environment: CommandEnvironment) throws {
        let setup = SecretServiceSetup(directory: directory, replace: replace, handler: handler,
                                       rules: { [self] in try currentRules() }, log: { AgentLog.write($0) }, environment: environment)
        let running: any RunningSecretService
        do {
            running = try support.start(setup)
        } catch {
            closeSocket()
            throw error
        }
        secretService.withLock { $0 = running }
        handler.announceSecretService(VaultAgentClient.Status.SecretService(busName: Self.secretServiceBusName, collection: directory))
    }

    /// The bus name the Secret Service is served under.
    static let secretServiceBusName = "org.freedesktop.secrets"

    /// Serves until SIGTERM, SIGINT or SIGHUP; then stops the Secret Service provider, forgets
    /// every key, removes the socket and returns.
    /// - Parameter ready: called once the agent accepts connections.
    func run(ready: () -> Void) {
        wakeUpDescriptor.store(wakeUp.write, ordering: .sequentiallyConsistent)
        for number in [SIGTERM, SIGINT, SIGHUP] { _ = signal(number, requestStop) }
        _ = signal(SIGPIPE, SIG_IGN)
        ready()
        var pollers = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeUp.read, events: Int16(POLLIN), revents: 0)]
        while true {
            pollers[0].revents = 0
            pollers[1].revents = 0
            let ready = poll(&pollers, 2, 1000)
            handler.forgetExpiredKeys()
            if ready < 0 {
                if errno == EINTR { continue }
                break
            }
            if pollers[1].revents != 0 { break }
            if pollers[0].revents != 0 { acceptOne() }
        }
        wakeUpDescriptor.store(-1, ordering: .sequentiallyConsistent)
        // The bus side goes first, so no D-Bus caller is answered once the keys are being forgotten.
        if let running = secretService.withLock({ served -> (any RunningSecretService)? in
            defer { served = nil }
            return served
        }) {
            running.stop()
            handler.announceSecretService(nil)
            AgentLog.write("released \(Self.secretServiceBusName)")
        }
        lockAll()
        closeSocket()
    }

    /// Closes the listening socket and removes its file (when the agent made it).
    private func closeSocket() {
        _ = close(listener)
        if ownsSocketFile { _ = unlink(socketPath) }
    }

    private func acceptOne() {
        let client = accept(listener, nil, nil)
        guard client >= 0 else { return }
        // Only this thread accepts and the agent starts no programs, so setting the flag after
        // accept(2) leaves no window for a descriptor to leak into one.
        _ = fcntl(client, F_SETFD, FD_CLOEXEC)
        guard let peer = AgentSocketPath.peerCredentials(client), peer.uid == geteuid() else {
            AgentLog.write("refused a connection from another user")
            _ = close(client)
            return
        }
        // At the cap, the connection idle the longest makes room (shut down: its thread wakes and
        // ends); when every one is busy, the new one is closed. Idle clients cannot starve others.
        let admitted: Bool = connections.withLock { connections in
            if connections.count >= Self.maximumConnections {
                let idle = connections.compactMap { descriptor, since in since.map { (descriptor, $0) } }.min { $0.1 < $1.1 }
                guard let (oldest, _) = idle else { return false }
                _ = shutdown(oldest, Int32(SHUT_RDWR))
                connections[oldest] = nil
            }
            connections[client] = .some(.now)
            return true
        }
        guard admitted else {
            _ = close(client)
            return
        }
        ServiceThread.start {
            // Identified once, before the first request is read, and bound to this connection.
            self.serve(client, caller: AgentCaller.identify(AgentPeer(socket: client, pid: peer.pid)))
            self.connections.withLock { connections in
                // Closed by its own thread only, after it is out of the table (so no reused
                // descriptor number can be shut down by mistake).
                if connections[client] != nil { connections[client] = nil }
            }
            _ = close(client)
        }
    }

    /// Answers the requests of one connection until it closes, idles out or sends garbage.
    private func serve(_ client: Int32, caller: AgentCaller) {
        while true {
            let request: AgentMessage?
            do {
                request = try AgentWire.receive(on: client, deadline: .now + Self.connectionIdleTimeout)
            } catch {
                return
            }
            guard let request else { return }
            let stillOpen = connections.withLock { connections -> Bool in
                guard connections[client] != nil else { return false }
                connections[client] = .some(nil)
                return true
            }
            guard stillOpen else { return }
            let answer = answer(request, caller: caller)
            connections.withLock { connections in
                if connections[client] != nil { connections[client] = .some(.now) }
            }
            do {
                try AgentWire.send(answer, on: client, deadline: .now + Self.answerTimeout)
            } catch {
                return
            }
        }
    }

    // MARK: Requests

    /// The answer to one request from `caller` (the connection's peer, identified when it was accepted).
    func answer(_ request: AgentMessage, caller: AgentCaller) -> AgentMessage {
        handler.answer(request, requester: caller.requester) { operation in try self.access(for: operation, caller: caller) }
    }

    /// The rules as they apply to `caller`, for an entry request; nil when there are none.
    /// - Throws: the rules file's error while it is unusable (or gone after rules were in force);
    ///   `.deniedByRule` for a caller that could not be identified while rules exist.
    private func access(for operation: AgentOperation, caller: AgentCaller) throws -> (any AgentAccessPolicy)? {
        guard let rules = try currentRules() else { return nil }
        guard caller.identified else {
            // No rule can be asked about a process that is not known to be the peer.
            AgentLog.write("refused \(operation) to \(caller.description)")
            throw VaultError(.deniedByRule, "the agent could not identify the process that connected (pid \(caller.pid)), so its rules refuse it",
                             fix: "keep the process that connects to the agent running while it asks")
        }
        return AgentRules.Access(rules: rules, caller: caller)
    }

    /// What was last read from the rules file.
    struct RulesState {
        /// The file's and its folder's `signature`, when it was read.
        var signature: [Int] = []
        var rules: AgentRules?
        /// Why the file cannot be used: every entry request gets this error.
        var error: VaultError?
        /// Rules were in force once: from then on, a file that disappears refuses entry requests.
        var hadRules = false
    }

    /// The rules in force: re-read when the file or its folder changed. A file that became unusable,
    /// or that disappeared after rules were in force, refuses every entry request (with its error)
    /// until a usable one is back: deleting the file must not lift a deny rule.
    func currentRules() throws -> AgentRules? {
        guard let rulesPath else { return nil }
        let signature = Self.signature(of: rulesPath)
        let state = rules.withLock { $0 }
        guard state.signature != signature else {
            if let error = state.error { throw error }
            return state.rules
        }
        var reloaded = RulesState(signature: signature, rules: nil, error: nil, hadRules: state.hadRules)
        do {
            reloaded.rules = try AgentRules.load(rulesPath)
            if reloaded.rules == nil, state.hadRules {
                reloaded.error = VaultError(.deniedByRule, "the agent's rules file is gone; the agent refuses entry requests until it is back",
                                            path: rulesPath, fix: "put the rules file back (or restart the agent without one)")
            }
        } catch let error as VaultError {
            reloaded.error = error
        }
        reloaded.hadRules = state.hadRules || reloaded.rules != nil
        rules.withLock { $0 = reloaded }
        AgentLog.write(reloaded.error == nil ? "read the rules again"
                       : signature.isEmpty ? "the rules file is gone; refusing entry requests until it is back"
                       : "the rules file is unusable; refusing entry requests")
        if let error = reloaded.error { throw error }
        return reloaded.rules
    }

    /// What tells a changed rules file: device, inode, mode, owner, size and modification time of
    /// the file (not following a symlink; empty when missing) and of its folder.
    private static func signature(of path: String) -> [Int] {
        var file = stat(), folder = stat()
        guard lstat(path, &file) == 0 else { return [] }
        let folderKnown = lstat(PathText.parent(of: path), &folder) == 0
        return [file, folderKnown ? folder : stat()].flatMap { status in
            [Int(status.st_dev), Int(status.st_ino), Int(status.st_mode), Int(status.st_uid), Int(status.st_size),
             status.st_mtim.tv_sec, status.st_mtim.tv_nsec]
        }
    }

    /// Forgets every key.
    func lockAll() {
        handler.lockAll()
    }
}

/// The agent's log, on standard error: times, events, directories; never a secret, key or entry value.
package enum AgentLog {
    /// Writes one line: time, pid, the event (terminal-escaped).
    package static func write(_ event: String) {
        StandardIO.printError("\(RFC3339.string(from: Date())) vault agent[\(getpid())]: \(TerminalText.escaped(event))\n")
    }
}

/// A detached pthread running one closure: the agent's per-connection threads and the Secret
/// Service provider's prompts.
package enum ServiceThread {
    private final class Work: @unchecked Sendable {  // handed once to the new thread, never shared
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }

    /// Starts `body` on a new detached thread; runs it on the calling thread if none can be made.
    package static func start(_ body: @escaping @Sendable () -> Void) {
        let work = Unmanaged.passRetained(Work(body)).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            let work = Unmanaged<Work>.fromOpaque(argument).takeRetainedValue()
            work.body()
            return nil
        }, work)
        if created == 0 {
            pthread_detach(thread)
        } else {
            Unmanaged<Work>.fromOpaque(work).takeRetainedValue().body()
        }
    }
}
