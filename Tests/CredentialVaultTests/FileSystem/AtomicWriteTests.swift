#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import CredentialVault

@Suite struct AtomicWriteTests {
    @Test func createsNewFileWith0600AndNoTemporaryFile() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("vault")
        try SecureFileSystem.writeFileAtomically(path, contents: [0, 1, 2, 0])
        #expect(try RawFiles.read(path) == [0, 1, 2, 0])
        #expect(try RawFiles.mode(path) == 0o600)
        #expect(try sandbox.names() == ["vault"])
    }

    @Test func replacesContentsAndKeeps0600() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("vault")
        try RawFiles.write(path, Array("old contents, longer than the new".utf8), mode: 0o600)
        let oldInode = try RawFiles.status(path).st_ino
        try SecureFileSystem.writeFileAtomically(path, contents: Array("new".utf8))
        #expect(try RawFiles.read(path) == Array("new".utf8))
        #expect(try RawFiles.mode(path) == 0o600)
        #expect(try RawFiles.status(path).st_ino != oldInode, "replaced by rename, not rewritten in place")
        #expect(try sandbox.names() == ["vault"])
        #expect(try SecureFileSystem.readPrivateFile(path, maxBytes: 16) == Array("new".utf8))
    }

    @Test func replacingA0644FileYields0600() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("vault")
        try RawFiles.write(path, [1], mode: 0o644)
        try SecureFileSystem.writeFileAtomically(path, contents: [2])
        #expect(try RawFiles.mode(path) == 0o600)
    }

    @Test func roundTripsOneMebibyteWithNULs() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        var contents = [UInt8](repeating: 0, count: 1 << 20)
        for index in stride(from: 0, to: contents.count, by: 3) { contents[index] = UInt8(truncatingIfNeeded: index) }
        try SecureFileSystem.writeFileAtomically(sandbox.child("v"), contents: contents)
        #expect(try SecureFileSystem.readPrivateFile(sandbox.child("v"), maxBytes: 1 << 20) == contents)
        try SecureFileSystem.writeFileAtomically(sandbox.child("v"), contents: [])
        #expect(try SecureFileSystem.readPrivateFile(sandbox.child("v"), maxBytes: 0) == [])
    }

    @Test func refusesSymlinkAtTargetAndLeavesLinkTargetUnchanged() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("elsewhere"), Array("precious".utf8), mode: 0o644)
        try RawFiles.symlink(sandbox.child("vault"), to: sandbox.child("elsewhere"))
        let error = expectFileSystemError(.insecurePermissions) {
            try SecureFileSystem.writeFileAtomically(sandbox.child("vault"), contents: Array("attack".utf8))
        }
        #expect(error?.message.contains("symbolic link") == true)
        #expect(try RawFiles.read(sandbox.child("elsewhere")) == Array("precious".utf8))
        #expect(try RawFiles.mode(sandbox.child("elsewhere")) == 0o644)
        #expect(try RawFiles.status(sandbox.child("vault")).st_mode & 0o170000 == 0o120000, "the link itself is kept")
        #expect(try sandbox.names() == ["elsewhere", "vault"], "no temporary file left")
    }

    // Tests run as root, and root ignores directory permissions, so a read-only directory
    // cannot make the write fail. A non-empty directory at the target makes rename(2)
    // fail after the temporary file was fully written, which exercises the clean-up path.
    @Test func failedRenameLeavesOldStateAndNoTemporaryFile() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("vault")
        try RawFiles.makeDirectory(path, mode: 0o700)
        try RawFiles.write(path + "/inside", Array("old".utf8))
        let error = expectFileSystemError(.io) { try SecureFileSystem.writeFileAtomically(path, contents: Array("new".utf8)) }
        #expect(error?.message.contains("Is a directory") == true)
        #expect(error?.path == path)
        #expect(try RawFiles.read(path + "/inside") == Array("old".utf8))
        #expect(try sandbox.names() == ["vault"], "the temporary file was removed")
    }

    @Test func missingDirectoryIsNotFound() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        expectFileSystemError(.notFound) { try SecureFileSystem.writeFileAtomically(sandbox.child("no/vault"), contents: [1]) }
    }

    @Test func pathWithoutFileNameIsInvalidInput() throws {
        #expect(throws: VaultError.self) { try SecureFileSystem.writeFileAtomically("", contents: [1]) }
        expectFileSystemError(.invalidInput) { try SecureFileSystem.writeFileAtomically("/tmp/..", contents: [1]) }
    }

    @Test func concurrentWritersLeaveOneCompleteVersion() async throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("vault")
        let versions = (0..<8).map { writer in [UInt8](repeating: UInt8(writer), count: 50_000 + writer) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for version in versions {
                group.addTask { for _ in 0..<5 { try SecureFileSystem.writeFileAtomically(path, contents: version) } }
            }
            try await group.waitForAll()
        }
        let final = try SecureFileSystem.readPrivateFile(path, maxBytes: 1 << 20)
        #expect(versions.contains(final))
        #expect(try sandbox.names() == ["vault"])
    }

    @Test func createFileExclusivelyCreates0600AndNeverReplaces() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("key")
        try SecureFileSystem.createFileExclusively(path, contents: [9, 0, 9])
        #expect(try RawFiles.read(path) == [9, 0, 9])
        #expect(try RawFiles.mode(path) == 0o600)
        expectFileSystemError(.alreadyExists) { try SecureFileSystem.createFileExclusively(path, contents: [1]) }
        #expect(try RawFiles.read(path) == [9, 0, 9])
        try RawFiles.symlink(sandbox.child("dangling"), to: sandbox.child("target"))
        expectFileSystemError(.alreadyExists) { try SecureFileSystem.createFileExclusively(sandbox.child("dangling"), contents: [1]) }
        #expect(!SecureFileSystem.exists(sandbox.child("target")), "never created through a symlink")
    }
}
