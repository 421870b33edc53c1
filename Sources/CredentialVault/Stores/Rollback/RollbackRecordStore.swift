import Logging

/// Reads and writes `RollbackRecord`s in the rollback-memory directory (0700, files 0600,
/// written atomically). Never inside the vault folder.
struct RollbackRecordStore: Sendable {
    let directory: String?
    let logger: Logger

    /// The record of `vaultID`, or nil when there is none, it is unreadable or malformed
    /// (logged), or memory is disabled.
    func read(vaultID: [UInt8]) -> RollbackRecord? {
        guard let path = path(vaultID: vaultID), SecureFileSystem.exists(path) else { return nil }
        do {
            let bytes = try SecureFileSystem.readPrivateFile(path, maxBytes: 4096)
            guard let record = RollbackRecord.parse(bytes), record.vaultID == vaultID else {
                logger.warning("ignoring a malformed rollback record", metadata: ["path": "\(path)"])
                return nil
            }
            return record
        } catch {
            logger.warning("ignoring an unreadable rollback record", metadata: ["path": "\(path)", "error": "\(error)"])
            return nil
        }
    }

    /// Writes `record` atomically but without fsync: a record lost to a power cut only makes
    /// the memory older (less protection, never a refused vault), and an fsync per vault
    /// write would double the cost of every write. A failure is logged, not thrown: the
    /// vault itself was already written.
    func write(_ record: RollbackRecord) {
        guard let directory, let path = path(vaultID: record.vaultID) else { return }
        do {
            try SecureFileSystem.ensurePrivateDirectory(directory, create: true)
            try SecureFileSystem.writeFileAtomically(path, contents: record.encoded(), durable: false)
        } catch {
            logger.warning("could not remember the vault generation", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }

    private func path(vaultID: [UInt8]) -> String? {
        directory.map { $0 + "/" + RollbackRecord.fileName(vaultID: vaultID) }
    }
}
