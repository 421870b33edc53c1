/// A store whose layout an explicit step moves to the newest version (the PostgreSQL store:
/// versions 1 and 2 to the bucketed version 3). The command line reaches it through this seam,
/// without linking the store's module.
package protocol StoreLayoutUpgrading: Sendable {
    /// Moves the store to the newest layout in one transaction; nothing is written when it is there already.
    /// - Returns: the version before and after, and whether anything was written.
    func upgradeLayout() async throws -> (previousVersion: Int, version: Int, changed: Bool)
}
