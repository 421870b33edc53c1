#if canImport(Glibc)
import Glibc
#endif
import CredentialVault
import VaultCLI

/// Who is calling, per unique bus name: asked of the bus (`GetConnectionCredentials`: UnixUserID,
/// ProcessID, and ProcessFD where the bus gives one) on the first call from that name, identified
/// as socket callers are (`AgentCaller.identify`), and bound to the name for the connection's
/// life. A unique name is never reused by the bus, so the binding cannot pass to another process;
/// it is forgotten when the connection leaves (NameOwnerChanged). Bus-thread only.
final class BusCallers {
    /// What is known of one connection.
    enum Identity {
        /// A process of the agent's user.
        case caller(AgentCaller)
        /// Refused: another user's, or the bus could not say.
        case refused(BusError)
    }

    private var known: [String: Identity] = [:]
    /// The most connections identified at once. A binding is never dropped while its connection is
    /// on the bus (it goes with NameOwnerChanged): past the limit a new connection is refused, not
    /// remembered, and may call again once others have left.
    static let maximumKnown = 4096

    /// The cap in force (`maximumKnown`; tests give a small one).
    let capacity: Int

    init(capacity: Int = BusCallers.maximumKnown) {
        self.capacity = capacity
    }

    /// The identity of `sender`, asked of the bus on its first call.
    func identity(of sender: String, on connection: BusConnection) -> Identity {
        if let identity = known[sender] { return identity }
        guard known.count < capacity else {
            return .refused(.accessDenied("too many connections identified (\(capacity)): try again when others have left the bus"))
        }
        let identity = Self.ask(sender, connection)
        known[sender] = identity
        return identity
    }

    /// Forgets a connection that left the bus.
    func forget(_ sender: String) {
        known[sender] = nil
    }

    private static func ask(_ sender: String, _ connection: BusConnection) -> Identity {
        let answer: [BusValue]
        do {
            answer = try connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                         member: "GetConnectionCredentials", arguments: [.string(sender)])
        } catch {
            return .refused(.accessDenied("the bus did not say who \(sender) is: \(error)"))
        }
        // ProcessFD (dbus-broker, dbus-daemon 1.15.7 and later): a pidfd of the caller, duplicated
        // for us by BusConnection.call; AgentPeer takes its own duplicate, so ours is closed here.
        let pidfd: Int32? = answer.first?.dictionary?["ProcessFD"].flatMap { value in
            if case let .unixFD(descriptor) = value.unwrapped, descriptor >= 0 { return descriptor }
            return nil
        }
        defer { if let pidfd { close(pidfd) } }
        guard let credentials = answer.first?.dictionary,
              let uid = credentials["UnixUserID"]?.unwrapped.uint32Value,
              let pid = credentials["ProcessID"]?.unwrapped.uint32Value else {
            return .refused(.accessDenied("the bus gave no user and process for \(sender)"))
        }
        guard uid == getuid() else {
            return .refused(.accessDenied("the Secret Service of this agent serves only its own user (uid \(getuid())); \(sender) is uid \(uid)"))
        }
        // Without a pidfd (dbus-daemon 1.14, Debian 12, sends none) the start time stands in (AgentPeer).
        let peer = AgentPeer(pid: Int32(bitPattern: pid), pidfd: pidfd)
        return .caller(AgentCaller.identify(peer))
    }
}
