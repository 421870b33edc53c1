#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import CredentialVault

@Suite struct PrivateDirectoryTests {
    @Test func createsMissingDirectoryAndParentsWith0700() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("a/b/vault")
        try SecureFileSystem.ensurePrivateDirectory(path, create: true)
        #expect(try RawFiles.mode(path) == 0o700)
        #expect(try RawFiles.mode(sandbox.child("a")) == 0o700)
        #expect(try RawFiles.mode(sandbox.child("a/b")) == 0o700)
        try SecureFileSystem.checkPrivateDirectory(path)
        // Idempotent, and a trailing slash is fine.
        try SecureFileSystem.ensurePrivateDirectory(path + "/", create: true)
    }

    @Test func acceptsExistingPrivateDirectory() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.makeDirectory(sandbox.child("d"), mode: 0o700)
        try SecureFileSystem.ensurePrivateDirectory(sandbox.child("d"), create: false)
        try SecureFileSystem.checkPrivateDirectory(sandbox.child("d"))
    }

    @Test(arguments: [mode_t(0o755), 0o750, 0o705, 0o770, 0o777])
    func refusesDirectoryOpenToOthersAndLeavesItAlone(mode: mode_t) throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("d")
        try RawFiles.makeDirectory(path, mode: mode)
        let error = expectFileSystemError(.insecurePermissions) { try SecureFileSystem.ensurePrivateDirectory(path, create: true) }
        #expect(error?.fix?.contains("chmod 700 \(path)") == true)
        expectFileSystemError(.insecurePermissions) { try SecureFileSystem.checkPrivateDirectory(path) }
        #expect(try RawFiles.mode(path) == mode, "an existing directory is checked, never silently repaired")
    }

    @Test func refusesSymlinkToPrivateDirectory() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.makeDirectory(sandbox.child("real"), mode: 0o700)
        try RawFiles.symlink(sandbox.child("link"), to: sandbox.child("real"))
        let error = expectFileSystemError(.insecurePermissions) {
            try SecureFileSystem.ensurePrivateDirectory(sandbox.child("link"), create: true)
        }
        #expect(error?.message.contains("symbolic link") == true)
        expectFileSystemError(.insecurePermissions) { try SecureFileSystem.checkPrivateDirectory(sandbox.child("link")) }
        // A dangling link is refused too, not created through.
        try RawFiles.symlink(sandbox.child("dangling"), to: sandbox.child("elsewhere"))
        expectFileSystemError(.insecurePermissions) { try SecureFileSystem.ensurePrivateDirectory(sandbox.child("dangling"), create: true) }
        #expect(!SecureFileSystem.exists(sandbox.child("elsewhere")))
    }

    @Test func refusesFileWhereDirectoryBelongs() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("f"), [1])
        let error = expectFileSystemError(.insecurePermissions) { try SecureFileSystem.checkPrivateDirectory(sandbox.child("f")) }
        #expect(error?.message.contains("not a directory") == true)
        expectFileSystemError(.io) { try SecureFileSystem.ensurePrivateDirectory(sandbox.child("f/sub"), create: true) }
    }

    @Test func missingDirectoryIsNotFoundWithoutCreate() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        expectFileSystemError(.notFound) { try SecureFileSystem.checkPrivateDirectory(sandbox.child("missing")) }
        expectFileSystemError(.notFound) { try SecureFileSystem.ensurePrivateDirectory(sandbox.child("missing"), create: false) }
        #expect(!SecureFileSystem.exists(sandbox.child("missing")))
    }

    @Test(.enabled(if: runningAsRoot, "only root can give a directory to another user"))
    func refusesDirectoryOwnedByAnotherUser() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.makeDirectory(sandbox.child("d"), mode: 0o700)
        #expect(chown(sandbox.child("d"), 65534, 65534) == 0)
        let error = expectFileSystemError(.insecurePermissions) { try SecureFileSystem.checkPrivateDirectory(sandbox.child("d")) }
        #expect(error?.message.contains("uid 65534") == true)
    }
}
