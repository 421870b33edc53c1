#if canImport(Glibc)
import Glibc
#endif
import CredentialVault
import VaultCLI

/// The Secret Service provider as `vault-secret-service` links it: `vault agent --secret-service`
/// serves the freedesktop Secret Service API (`org.freedesktop.secrets` on the session bus) from
/// the agent's own process, and `vault import --from secret-service` reads another provider's
/// items. D-Bus is spoken through sd-bus (libsystemd), on a thread of the provider's own.
package struct SecretServiceCommands: SecretServiceCommandSupport {
    /// The bus name of the Secret Service.
    static let busName = "org.freedesktop.secrets"

    /// The bus to use instead of the session bus of the environment (a test's private bus).
    let busAddress: String?

    /// The provider, ready to start.
    /// - Parameter busAddress: a D-Bus address to connect to instead of the session bus (tests).
    package init(busAddress: String? = nil) {
        self.busAddress = busAddress
    }

    package func start(_ setup: SecretServiceSetup) throws -> any RunningSecretService {
        let connection = try BusConnection.openSessionBus(description: "vault-agent", address: busAddress)
        do {
            return try serve(setup, on: connection)
        } catch {
            connection.close()
            throw error
        }
    }

    private func serve(_ setup: SecretServiceSetup, on connection: BusConnection) throws -> any RunningSecretService {
        let thread = try BusThread()
        let provider = SecretServiceProvider(setup: setup, connection: connection, thread: thread)
        try connection.addFallback(SecretPaths.service) { provider.handle($0) }
        // sd-bus tries the longest prefix first: "/" only sees the paths outside the service.
        try connection.addFallback("/") { provider.handleOutside($0) }
        try connection.matchSignal(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged") { message in
            if let values = try? BusMessage.readBody(message), values.count == 3, let name = values[0].stringValue,
               name.hasPrefix(":"), values[2].stringValue == "" {
                provider.connectionLeft(name)
            }
            return false
        }
        let lost = LostName()
        try connection.matchSignal(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus", member: "NameLost") { message in
            if let values = try? BusMessage.readBody(message), values.first?.stringValue == Self.busName {
                setup.log("another program took \(Self.busName): the agent no longer serves the Secret Service")
                lost.happened = true
                thread.finish()
            }
            return false
        }
        let requested = connection.requestName(Self.busName, replaceExisting: setup.replace)
        if requested < 0 {
            guard requested == -EEXIST else {
                throw VaultError(.busUnavailable, "cannot claim \(Self.busName) on the session bus: \(String(cString: strerror(-requested)))")
            }
            let owner = Self.describeOwner(of: Self.busName, connection)
            throw VaultError(.alreadyExists, "another program (\(owner)) owns \(Self.busName) on the session bus"
                             + (setup.replace ? " and does not let it be replaced" : ""),
                             fix: setup.replace ? "stop it" : "stop it, or start the agent with --replace")
        }
        setup.log("serving the Secret Service (\(Self.busName)) for \(setup.directory) as \(connection.uniqueName)")
        try thread.start(connection) { broken in
            if broken { setup.log("the session bus connection broke: the agent no longer serves the Secret Service") }
            if !broken, !lost.happened { connection.releaseName(Self.busName) }
            connection.close()
        }
        return RunningProvider(thread: thread)
    }

    package func exportItems(_ setup: SecretServiceExportSetup) throws -> [SecretServiceItemExport] {
        try SecretServiceExporter(timeout: setup.timeout, busAddress: busAddress).export()
    }

    /// "pid N, /usr/bin/…" of the connection that owns `name`, as far as the bus says.
    private static func describeOwner(of name: String, _ connection: BusConnection) -> String {
        guard let owner = (try? connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                interface: "org.freedesktop.DBus", member: "GetNameOwner",
                                                arguments: [.string(name)]))?.first?.stringValue else { return "unknown" }
        guard let pid = (try? connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                              interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                              arguments: [.string(owner)]))?.first?.uint32Value else { return owner }
        let executable = ProcessFiles.executable(of: Int32(bitPattern: pid))
        return "pid \(pid)" + (executable.map { ", \(TerminalText.escaped($0))" } ?? "") + ", \(owner)"
    }
}

/// Whether the name was taken from the provider (set and read on the bus thread only).
private final class LostName: @unchecked Sendable {
    var happened = false
}

/// The running provider: stopping it ends the bus thread, which releases the name and closes the connection.
private final class RunningProvider: RunningSecretService {
    let thread: BusThread
    init(thread: BusThread) { self.thread = thread }
    func stop() { thread.stop() }
}
