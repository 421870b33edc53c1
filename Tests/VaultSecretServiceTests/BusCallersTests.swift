import Foundation
import Testing
import TestScheduling
@testable import VaultSecretService

/// The identities bound to bus connections (`BusCallers`): a binding is never dropped while its
/// connection is on the bus; past the cap a new connection is refused until one has left.
@Suite(.blockingWork, .serialized) struct BusCallersTests {
    @Test func pastTheCapANewConnectionIsRefusedAndNoLiveBindingIsDropped() throws {
        guard SecretServiceWorld.clientsInstalled() else { return }
        let world = try SecretServiceWorld(startAgent: false)
        let asking = try BusConnection.openSessionBus(description: "test", address: world.busAddress)
        let clients = try (0..<3).map { _ in try BusConnection.openSessionBus(description: "client", address: world.busAddress) }
        let callers = BusCallers(capacity: 2)
        func identified(_ client: BusConnection) -> Bool {
            if case .caller = callers.identity(of: client.uniqueName, on: asking) { return true }
            return false
        }
        #expect(identified(clients[0]))
        #expect(identified(clients[1]))
        guard case let .refused(error) = callers.identity(of: clients[2].uniqueName, on: asking) else {
            Issue.record("the third connection was identified past the cap")
            return
        }
        #expect(error.name == "org.freedesktop.DBus.Error.AccessDenied")
        #expect(error.message.contains("too many connections identified"))
        #expect(identified(clients[0]) && identified(clients[1]), "the live bindings are kept")
        callers.forget(clients[1].uniqueName)
        #expect(identified(clients[2]), "once a connection has left, a new one is identified")
        for client in clients { client.close() }
        asking.close()
    }
}
