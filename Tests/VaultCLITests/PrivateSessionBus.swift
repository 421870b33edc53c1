#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
import TestScheduling

/// A session bus of a test's own: Debian's `dbus-daemon --session` listening on a socket in the
/// test's folder (what `dbus-run-session` starts), stopped by its PID when the test is done.
final class PrivateSessionBus {
    /// The value for `DBUS_SESSION_BUS_ADDRESS`.
    let address: String
    private let daemon = Process()

    /// Starts the bus with its socket in `folder`; nil when dbus-daemon is not installed (a
    /// recorded failure under CI=true).
    init?(in folder: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let executable = ExternalProcess.required("dbus-daemon", sourceLocation: sourceLocation) else { return nil }
        let socket = folder + "/bus"
        address = "unix:path=" + socket
        daemon.executableURL = URL(fileURLWithPath: executable)
        daemon.arguments = ["--session", "--nofork", "--nopidfile", "--address=" + address]
        daemon.standardInput = FileHandle.nullDevice
        daemon.standardOutput = FileHandle.nullDevice
        daemon.standardError = FileHandle.nullDevice
        try daemon.run()
        BlockingWait.check("waiting for dbus-daemon", sourceLocation: sourceLocation)
        let deadline = Date().addingTimeInterval(20)
        while !FileManager.default.fileExists(atPath: socket), daemon.isRunning, Date() < deadline { usleep(10_000) }
        guard FileManager.default.fileExists(atPath: socket) else {
            stop()
            throw CLITestFailure("dbus-daemon did not listen on \(socket)")
        }
    }

    /// Stops the bus (its PID) and waits for it, at most 10 s. SIGKILL: the daemon inherits the test
    /// process's blocked signals, SIGTERM among them, and a throwaway bus has nothing to save.
    func stop() {
        guard daemon.isRunning else { return }
        kill(daemon.processIdentifier, SIGKILL)
        let deadline = Date().addingTimeInterval(10)
        while daemon.isRunning, Date() < deadline { usleep(5_000) }
    }

    deinit { stop() }
}
