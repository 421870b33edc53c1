#if canImport(Glibc)
import Glibc
#endif
import CSystemdBus
import CredentialVault

/// One connection to the session bus (`sd_bus`), owned by one thread at a time.
///
/// sd-bus objects are not thread-safe: the connection is made and its name requested on the thread
/// that starts the provider, then handed whole to the bus thread (`BusThread`), which makes every
/// later call. Nothing here is touched by two threads at once, which is why it is
/// `@unchecked Sendable` (it crosses to the bus thread once).
final class BusConnection: @unchecked Sendable {
    /// The `sd_bus` object.
    let bus: OpaquePointer
    /// The callbacks registered (fallbacks, matches), kept alive as long as the connection.
    private var callbacks: [Unmanaged<MessageCallback>] = []

    /// A closure sd-bus calls for a message, boxed for its `void *userdata`.
    final class MessageCallback {
        let body: (OpaquePointer) -> Bool
        init(_ body: @escaping (OpaquePointer) -> Bool) { self.body = body }
    }

    /// The longest a call to another connection may take (the bus daemon, a client's provider).
    static let defaultCallTimeout: Duration = .seconds(5)

    private init(bus: OpaquePointer) {
        self.bus = bus
    }

    private var closed = false

    deinit {
        close()
    }

    /// Flushes and closes the connection (`sd_bus_flush_close_unref`) and lets go of the callbacks
    /// (which break the cycle through the objects they call). Nothing may use the connection after.
    func close() {
        guard !closed else { return }
        closed = true
        _ = sd_bus_flush_close_unref(bus)
        for callback in callbacks { callback.release() }
        callbacks.removeAll()
    }

    /// Connects to the user's session bus (`$DBUS_SESSION_BUS_ADDRESS`, else `$XDG_RUNTIME_DIR/bus`;
    /// `sd_bus_open_user_with_description`), or to the bus at `address` when one is given (a test's
    /// private bus; `sd_bus_set_address`, `sd_bus_set_bus_client`, `sd_bus_start`).
    /// - Throws: `VaultError` `.busUnavailable` when there is no session bus to connect to.
    static func openSessionBus(description: String, address: String? = nil) throws -> BusConnection {
        var bus: OpaquePointer?
        var opened: Int32
        if let address {
            opened = sd_bus_new(&bus)
            if opened >= 0, let made = bus {
                _ = sd_bus_set_description(made, description)
                opened = sd_bus_set_address(made, address)
                if opened >= 0 { opened = sd_bus_set_bus_client(made, 1) }
                if opened >= 0 { opened = sd_bus_start(made) }
                if opened < 0 {
                    _ = sd_bus_flush_close_unref(made)
                    bus = nil
                }
            }
        } else {
            opened = sd_bus_open_user_with_description(&bus, description)
        }
        guard opened >= 0, let bus else {
            throw VaultError(.busUnavailable, "cannot connect to the session bus: \(String(cString: strerror(-opened)))",
                             fix: "run under a D-Bus session (DBUS_SESSION_BUS_ADDRESS), e.g. dbus-run-session")
        }
        _ = sd_bus_set_method_call_timeout(bus, UInt64(defaultCallTimeout.components.seconds) * 1_000_000)
        return BusConnection(bus: bus)
    }

    /// This connection's unique name (":1.42").
    var uniqueName: String {
        var name: UnsafePointer<CChar>?
        guard sd_bus_get_unique_name(bus, &name) >= 0, let name else { return "" }
        return String(cString: name)
    }

    // MARK: Names and callbacks

    /// Asks the bus for `name` (`sd_bus_request_name`, no queueing).
    /// - Returns: sd-bus's result: >= 0 owned, -EEXIST owned by another connection, other negative errno.
    func requestName(_ name: String, replaceExisting: Bool) -> Int32 {
        let flags: UInt64 = replaceExisting ? UInt64(SD_BUS_NAME_REPLACE_EXISTING) : 0
        return sd_bus_request_name(bus, name, flags)
    }

    /// Gives up `name` (`sd_bus_release_name`).
    func releaseName(_ name: String) {
        _ = sd_bus_release_name(bus, name)
    }

    /// Calls `body` for every method call to `prefix` and the paths below it (`sd_bus_add_fallback`).
    /// `body` returns true when it answered the message.
    func addFallback(_ prefix: String, _ body: @escaping (OpaquePointer) -> Bool) throws {
        let callback = Unmanaged.passRetained(MessageCallback(body))
        callbacks.append(callback)
        try BusMessage.check(sd_bus_add_fallback(bus, nil, prefix, Self.trampoline, callback.toOpaque()), "registering \(prefix)")
    }

    /// Calls `body` for every signal named `member` of `sender` (any when nil) from `path` (any
    /// when nil) (`sd_bus_match_signal`).
    func matchSignal(sender: String?, path: String? = nil, interface: String, member: String,
                     _ body: @escaping (OpaquePointer) -> Bool) throws {
        let callback = Unmanaged.passRetained(MessageCallback(body))
        callbacks.append(callback)
        try BusMessage.check(sd_bus_match_signal(bus, nil, sender, path, interface, member, Self.trampoline, callback.toOpaque()),
                             "subscribing to \(member)")
    }

    private static let trampoline: sd_bus_message_handler_t = { message, userdata, _ in
        guard let message, let userdata else { return 0 }
        return Unmanaged<MessageCallback>.fromOpaque(userdata).takeUnretainedValue().body(message) ? 1 : 0
    }

    // MARK: Sending

    /// Calls a method of another connection and waits for its answer (`sd_bus_call`), at most `timeout`.
    /// - Returns: the answer's values.
    /// - Throws: `BusError` with the error the other side answered, or the failure to reach it.
    func call(destination: String, path: String, interface: String, member: String, arguments: [BusValue] = [],
              timeout: Duration = defaultCallTimeout, sensitive: Bool = false) throws -> [BusValue] {
        var message: OpaquePointer?
        try BusMessage.check(sd_bus_message_new_method_call(bus, &message, destination, path, interface, member), "making a call")
        guard let message else { throw BusError.failed("making a call") }
        defer { sd_bus_message_unref(message) }
        if sensitive { _ = sd_bus_message_sensitive(message) }
        try BusMessage.append(arguments, to: message)
        var error = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&error) }
        var reply: OpaquePointer?
        let microseconds = max(1, timeout.components.seconds * 1_000_000 + timeout.components.attoseconds / 1_000_000_000_000)
        let called = sd_bus_call(bus, message, UInt64(microseconds), &error, &reply)
        guard called >= 0, let reply else {
            if let name = error.name {
                throw BusError(name: String(cString: name), message: error.message.map { String(cString: $0) } ?? "")
            }
            throw BusError.failed("calling \(member) of \(destination)", errno: -called)
        }
        defer { sd_bus_message_unref(reply) }
        if sensitive { _ = sd_bus_message_sensitive(reply) }
        // A descriptor (`h`) is the reply's, closed with it: the answer holds a duplicate, which the caller closes.
        return try BusMessage.readBody(reply).map(Self.duplicatingDescriptors)
    }

    private static func duplicatingDescriptors(_ value: BusValue) -> BusValue {
        switch value {
        case let .unixFD(descriptor): return .unixFD(descriptor >= 0 ? fcntl(descriptor, F_DUPFD_CLOEXEC, 0) : -1)
        case let .variant(inner): return .variant(duplicatingDescriptors(inner))
        case let .array(element, elements): return .array(element: element, elements.map(duplicatingDescriptors))
        case let .structure(members): return .structure(members.map(duplicatingDescriptors))
        case let .dictionaryEntry(key, inner): return .dictionaryEntry(key, duplicatingDescriptors(inner))
        default: return value
        }
    }

    /// Answers a method call with `values` (`sd_bus_message_new_method_return`).
    /// - Parameter sensitive: the answer holds a secret: sd-bus wipes its buffer when freed.
    func reply(to call: OpaquePointer, _ values: [BusValue], sensitive: Bool = false) throws {
        var message: OpaquePointer?
        try BusMessage.check(sd_bus_message_new_method_return(call, &message), "making an answer")
        guard let message else { throw BusError.failed("making an answer") }
        defer { sd_bus_message_unref(message) }
        if sensitive { _ = sd_bus_message_sensitive(message) }
        try BusMessage.append(values, to: message)
        try BusMessage.check(sd_bus_send(bus, message, nil), "sending an answer")
    }

    /// Answers a method call with an error (`sd_bus_message_new_method_error`).
    func reply(to call: OpaquePointer, error: BusError) {
        var bodyError = sd_bus_error(name: nil, message: nil, _need_free: 0)
        defer { sd_bus_error_free(&bodyError) }
        _ = sd_bus_error_set(&bodyError, error.name, error.message)
        var message: OpaquePointer?
        guard sd_bus_message_new_method_error(call, &message, &bodyError) >= 0, let message else { return }
        defer { sd_bus_message_unref(message) }
        _ = sd_bus_send(bus, message, nil)
    }

    /// Sends a signal (`sd_bus_message_new_signal`).
    func emitSignal(path: String, interface: String, member: String, _ values: [BusValue]) {
        var message: OpaquePointer?
        guard sd_bus_message_new_signal(bus, &message, path, interface, member) >= 0, let message else { return }
        defer { sd_bus_message_unref(message) }
        guard (try? BusMessage.append(values, to: message)) != nil else { return }
        _ = sd_bus_send(bus, message, nil)
    }

    // MARK: Processing

    /// Processes what is pending (`sd_bus_process`) until nothing is; false once the connection is broken.
    func processPending() -> Bool {
        for _ in 0..<10_000 {
            let processed = sd_bus_process(bus, nil)
            if processed < 0 { return false }
            if processed == 0 { return true }
        }
        return true
    }

    /// Waits until the bus or `wakeDescriptor` is readable, or sd-bus's own timeout, or `limit`.
    /// - Returns: whether `wakeDescriptor` became readable.
    func wait(orWake wakeDescriptor: Int32, limit: Duration) -> Bool {
        let descriptor = sd_bus_get_fd(bus)
        let events = sd_bus_get_events(bus)
        var limitMilliseconds = Int64(limit.components.seconds * 1000)
        var deadline: UInt64 = 0
        if sd_bus_get_timeout(bus, &deadline) >= 0, deadline != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            let left = deadline > nowMicroseconds ? Int64((deadline - nowMicroseconds + 999) / 1000) : 0
            limitMilliseconds = min(limitMilliseconds, left)
        }
        var descriptors = [pollfd(fd: descriptor, events: Int16(truncatingIfNeeded: max(events, 0)), revents: 0),
                           pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
        let ready = poll(&descriptors, 2, Int32(limitMilliseconds))
        return ready > 0 && descriptors[1].revents != 0
    }

    /// Sends what is queued (`sd_bus_flush`), before the connection closes.
    func flush() {
        _ = sd_bus_flush(bus)
    }
}
