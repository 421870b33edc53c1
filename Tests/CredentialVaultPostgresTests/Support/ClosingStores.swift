@testable import CredentialVaultPostgres
import CredentialVault
import Foundation

/// The stores a test opens, closed when it ends whether it passed or threw: a store left open keeps
/// its pool reconnecting while the test's private server is stopped and deleted.
final class ClosingStores {
    private var open: [PostgresSecretStore] = []

    /// Runs `body`, then closes every store it kept and did not close itself, also when `body` threw.
    static func run(_ body: (ClosingStores) async throws -> Void) async throws {
        let stores = ClosingStores()
        do {
            try await body(stores)
        } catch {
            await stores.closeAll()
            throw error
        }
        await stores.closeAll()
    }

    /// `store`, closed at the end unless `close(_:)` closes it before.
    func keep(_ store: PostgresSecretStore) -> PostgresSecretStore {
        open.append(store)
        return store
    }

    /// Closes `store` now (the test goes on with other stores of the same vault).
    func close(_ store: PostgresSecretStore) async {
        open.removeAll { $0 === store }
        await store.close()
    }

    private func closeAll() async {
        for store in open.reversed() { await store.close() }
        open = []
    }
}
