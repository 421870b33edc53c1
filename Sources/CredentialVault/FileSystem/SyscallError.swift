/// A failed system call: which call and its `errno`, before it is turned into a `VaultError`.
///
/// Kept separate from `VaultError` so the layer above can decide what each errno means
/// (ENOENT is "not found" for a read but fine for a removal with `ignoreMissing`).
struct SyscallError: Error, Equatable, Sendable {
    /// The C function that failed, e.g. "open".
    let call: String
    /// The `errno` it reported.
    let code: Int32

    /// The failure as an `.io` vault error with the errno text.
    func vaultError(_ operation: String, path: String) -> VaultError {
        .io(operation, path: path, errno: code)
    }
}
