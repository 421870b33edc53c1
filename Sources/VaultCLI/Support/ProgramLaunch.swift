#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How vault starts another program: the one place that calls `posix_spawn` / `posix_spawnp`
/// (the helpers, `exec`'s command, the clipboard clearer, a browser, the detached agent).
/// Not Foundation's `Process`: its exit notification needs a run loop that vault's main thread
/// does not spin, and it would copy a secret environment into memory vault does not wipe.
struct ProgramLaunch {
    /// Where one of the child's standard streams goes.
    enum Stream {
        /// The child shares vault's own.
        case inherited
        /// `/dev/null` (read-only for standard input, write-only otherwise).
        case null
        /// This descriptor of vault's, duplicated onto the stream.
        case descriptor(Int32)
    }

    /// Why a program did not start: the error `posix_spawn` returned.
    struct Failure: Error {
        /// The errno value (`ENOENT` for a program not found).
        let errno: Int32
    }

    /// A path, or with `searchesPath` a name looked up on `PATH`.
    var executable: String
    /// The argument vector, `argv[0]` first.
    var arguments: [String]
    /// Whether `executable` is looked up on `PATH` (`posix_spawnp`).
    var searchesPath = true
    var standardInput = Stream.inherited
    var standardOutput = Stream.inherited
    var standardError = Stream.inherited
    /// Descriptors closed in the child (after the streams are set up).
    var closedInChild: [Int32] = []
    /// Whether vault's other inherited descriptors are first marked close-on-exec
    /// (`InheritedDescriptors`), for a program that may outlive vault.
    var closesInheritedDescriptors = true
    /// Whether the child starts a session of its own (it outlives a Ctrl-C at vault's terminal).
    var newSession = false
    /// Signals whose disposition the child gets back at their default (vault ignores SIGPIPE).
    var defaultSignals: [Int32] = []
    /// Whether the child starts with no signal blocked.
    var unblocksSignals = false

    /// `POSIX_SPAWN_SETSID` (glibc 2.26+; Swift's Glibc module does not export the macro).
    private static let setSessionIDFlag: Int32 = 0x80

    /// Starts the program.
    /// - Parameter environment: the child's `NAME=value` strings, nil-terminated; nil for vault's
    ///   own environment. The caller owns the strings and keeps them alive during the call.
    /// - Returns: the child's PID, or the failure (the child never ran).
    func start(environment: [UnsafeMutablePointer<CChar>?]? = nil) -> Result<pid_t, Failure> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Duplications first (their sources are still open), then the closes, then /dev/null.
        let streams = [(Int32(0), standardInput), (1, standardOutput), (2, standardError)]
        for case let (number, .descriptor(descriptor)) in streams { posix_spawn_file_actions_adddup2(&actions, descriptor, number) }
        for descriptor in closedInChild { posix_spawn_file_actions_addclose(&actions, descriptor) }
        for case let (number, .null) in streams {
            posix_spawn_file_actions_addopen(&actions, number, "/dev/null", number == 0 ? O_RDONLY : O_WRONLY, 0)
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var flags: Int32 = 0
        if !defaultSignals.isEmpty {
            var defaults = sigset_t()
            sigemptyset(&defaults)
            for number in defaultSignals { sigaddset(&defaults, number) }
            posix_spawnattr_setsigdefault(&attributes, &defaults)
            flags |= Int32(POSIX_SPAWN_SETSIGDEF)
        }
        if unblocksSignals {
            var empty = sigset_t()
            sigemptyset(&empty)
            posix_spawnattr_setsigmask(&attributes, &empty)
            flags |= Int32(POSIX_SPAWN_SETSIGMASK)
        }
        if newSession { flags |= Self.setSessionIDFlag }
        posix_spawnattr_setflags(&attributes, Int16(flags))

        if closesInheritedDescriptors { InheritedDescriptors.closeOnExec() }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let status: Int32
        switch (searchesPath, environment) {
        case (true, let environment?): status = posix_spawnp(&pid, executable, &actions, &attributes, argv, environment)
        case (true, nil): status = posix_spawnp(&pid, executable, &actions, &attributes, argv, environ)
        case (false, let environment?): status = posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        case (false, nil): status = posix_spawn(&pid, executable, &actions, &attributes, argv, environ)
        }
        return status == 0 ? .success(pid) : .failure(Failure(errno: status))
    }
}
