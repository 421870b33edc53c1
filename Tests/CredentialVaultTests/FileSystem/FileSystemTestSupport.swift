#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import CredentialVault

/// A fresh 0700 directory under `NSTemporaryDirectory()` for one file-layer test.
/// Call `remove()` in a `defer`; ARC may end the object's life before the test does.
struct FileSystemSandbox {
    /// The directory.
    let path: String

    /// Creates the directory with `mkdtemp(3)` (mode 0700).
    init() throws {
        var template = Array((NSTemporaryDirectory() + "vault-fs-XXXXXX").utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, mkdtemp(base) != nil else { return nil }
            return String(cString: base)
        }
        guard let created else { throw FileSystemTestError("mkdtemp failed: errno \(errno)") }
        path = created
    }

    /// `path/name`.
    func child(_ name: String) -> String { path + "/" + name }

    /// Names in the directory, sorted.
    func names() throws -> [String] { try FileManager.default.contentsOfDirectory(atPath: path).sorted() }

    /// Deletes the directory and everything in it (symlinks are removed, not followed).
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// A failure in test set-up itself.
struct FileSystemTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Direct C calls for setting up cases, deliberately not through `SecureFileSystem`.
enum RawFiles {
    /// Creates or truncates `path` with `bytes` and then sets exactly `mode`.
    static func write(_ path: String, _ bytes: [UInt8], mode: mode_t = 0o600) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw FileSystemTestError("open \(path): errno \(errno)") }
        defer { close(fd) }
        let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fchmod(fd, mode) == 0 else { throw FileSystemTestError("write \(path)") }
    }

    /// The bytes of `path` (following symlinks), without any checks.
    static func read(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw FileSystemTestError("read \(path)") }
        return [UInt8](data)
    }

    /// `lstat` of `path`.
    static func status(_ path: String) throws -> stat {
        var result = stat()
        guard lstat(path, &result) == 0 else { throw FileSystemTestError("lstat \(path): errno \(errno)") }
        return result
    }

    /// Permission bits of `path` (not following symlinks).
    static func mode(_ path: String) throws -> mode_t { try status(path).st_mode & 0o7777 }

    /// Creates a directory with exactly `mode`.
    static func makeDirectory(_ path: String, mode: mode_t) throws {
        guard mkdir(path, 0o700) == 0, chmod(path, mode) == 0 else { throw FileSystemTestError("mkdir \(path): errno \(errno)") }
    }

    /// Creates a symbolic link at `path` pointing to `target`.
    static func symlink(_ path: String, to target: String) throws {
        guard Glibc.symlink(target, path) == 0 else { throw FileSystemTestError("symlink \(path): errno \(errno)") }
    }
}

/// Expects `body` to throw a `VaultError` with `code`, and checks what every file-layer
/// error must carry: a non-empty message and a path.
@discardableResult
func expectFileSystemError<T>(_ code: VaultError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                              _ body: () throws -> T) -> VaultError? {
    do {
        _ = try body()
        Issue.record("expected VaultError \(code), but nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as VaultError {
        #expect(error.code == code, "expected \(code), got \(error.code): \(error)", sourceLocation: sourceLocation)
        #expect(!error.message.isEmpty, "empty message: \(error)", sourceLocation: sourceLocation)
        #expect(!(error.path ?? "").isEmpty, "no path: \(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected VaultError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Whether the tests run as root, which bypasses permission checks (so "read-only
/// directory" cannot inject failures) but can `chown` files to other users.
var runningAsRoot: Bool { geteuid() == 0 }
