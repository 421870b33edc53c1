#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SecureFileSystem {
    /// Removes a file (not a directory) and fsyncs its directory so the removal is durable.
    /// - Parameters:
    ///   - path: the file; a symlink is removed itself, its target is untouched.
    ///   - ignoreMissing: return quietly when the file (or its directory) does not exist.
    /// - Throws: `VaultError` `.notFound` when missing and not ignored, `.io` otherwise.
    static func removeFile(_ path: String, ignoreMissing: Bool) throws {
        let parts = try SplitPath(path)
        let directory: OwnedDescriptor
        do {
            directory = try openParentDirectory(of: parts, path: path)
        } catch {
            if error.code == .notFound && ignoreMissing { return }
            throw error
        }
        do {
            try Syscall.unlinkEntry(parts.name, in: directory.raw)
        } catch {
            if error.code == ENOENT {
                if ignoreMissing { return }
                throw VaultError.fileNotFound(path)
            }
            throw error.vaultError("removing the file", path: path)
        }
        try synchronizeDirectory(directory.raw, path: path, afterReplacing: false)
    }

    /// Removes the ".<basename>.tmp.<16 hex>" files that crashed writers left in `directory`.
    ///
    /// Call it while holding the vault's exclusive `FileLock`, or it may delete the
    /// temporary file of a writer that is still running. Only names matching the pattern
    /// exactly are removed; directories with such names are left alone. Failures are
    /// ignored: leftovers are retried next time and never read.
    /// - Returns: how many files were removed.
    @discardableResult
    static func removeStaleTemporaryFiles(in directory: String, for basename: String) -> Int {
        guard let raw = try? Syscall.openFile(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC) else { return 0 }
        let descriptor = OwnedDescriptor(raw)
        guard let names = try? Syscall.entries(of: descriptor.raw) else { return 0 }
        var removed = 0
        for name in names where TemporaryFileName.matches(name, for: basename) {
            if (try? Syscall.unlinkEntry(name, in: descriptor.raw)) != nil { removed += 1 }
        }
        if removed > 0 { try? synchronizeDirectory(descriptor.raw, path: directory, afterReplacing: false) }
        return removed
    }
}
