/// Test-only fault injection for the file layer.
///
/// `package` access, and a task-local value: only this package's tests can set it, only
/// for the code they run inside `withValue`, so tests running in parallel and every
/// other caller are unaffected. No environment variable, flag or file reaches it.
package enum IOFaultInjection {
    /// When set, every `Syscall.writeAll` in the current task fails with this `errno`
    /// (e.g. `ENOSPC`) before writing anything, as a full disk would.
    @TaskLocal package static var failingWritesErrno: Int32?
}

extension IOFaultInjection {
    /// When set, a `SecretStore` calls this right after it has read its vault file and before
    /// it checks the rollback record: where another process's commit lands in a race.
    @TaskLocal package static var afterVaultFileRead: (@Sendable () -> Void)?
}
