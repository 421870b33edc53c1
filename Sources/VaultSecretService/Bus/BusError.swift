#if canImport(Glibc)
import Glibc
#endif

/// A D-Bus error: its name (`org.freedesktop.Secret.Error.IsLocked`, …) and a message that never
/// holds a secret. What a method of the provider throws is sent back as this error.
struct BusError: Error, Sendable, CustomStringConvertible {
    /// The error's D-Bus name.
    let name: String
    /// What went wrong, for a person.
    let message: String

    var description: String { "\(name): \(message)" }

    /// `org.freedesktop.DBus.Error.InvalidArgs`.
    static func invalidArguments(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message)
    }

    /// `org.freedesktop.Secret.Error.NoSuchObject`.
    static func noSuchObject(_ path: String) -> BusError {
        BusError(name: "org.freedesktop.Secret.Error.NoSuchObject", message: "no such object: \(path)")
    }

    /// `org.freedesktop.Secret.Error.IsLocked`.
    static func isLocked(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.Secret.Error.IsLocked", message: message)
    }

    /// `org.freedesktop.Secret.Error.NoSession`.
    static func noSession(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.Secret.Error.NoSession", message: message)
    }

    /// `org.freedesktop.DBus.Error.AccessDenied`.
    static func accessDenied(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.AccessDenied", message: message)
    }

    /// `org.freedesktop.DBus.Error.NotSupported`.
    static func notSupported(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.NotSupported", message: message)
    }

    /// `org.freedesktop.DBus.Error.UnknownMethod`.
    static func unknownMethod(_ interface: String, _ member: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(member) in interface \(interface) here")
    }

    /// `org.freedesktop.DBus.Error.UnknownProperty`.
    static func unknownProperty(_ interface: String, _ name: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "no property \(name) in interface \(interface) here")
    }

    /// `org.freedesktop.DBus.Error.PropertyReadOnly`.
    static func readOnly(_ name: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.PropertyReadOnly", message: "the property \(name) cannot be set")
    }

    /// `org.freedesktop.DBus.Error.Failed` for an sd-bus call that failed.
    static func failed(_ doing: String, errno code: Int32) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.Failed", message: "\(doing) failed: \(String(cString: strerror(code)))")
    }

    /// `org.freedesktop.DBus.Error.Failed` with a message.
    static func failed(_ message: String) -> BusError {
        BusError(name: "org.freedesktop.DBus.Error.Failed", message: message)
    }
}
