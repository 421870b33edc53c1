#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import CredentialVault

@Suite struct ReadPrivateFileTests {
    @Test func readsExactBytesIncludingNULs() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let bytes: [UInt8] = [0, 1, 0, 0xff, 0, 0x80, 0]
        try RawFiles.write(sandbox.child("f"), bytes)
        #expect(try SecureFileSystem.readPrivateFile(sandbox.child("f"), maxBytes: 64) == bytes)
    }

    @Test func readsEmptyFileAndFileOfExactlyMaxBytes() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("empty"), [])
        #expect(try SecureFileSystem.readPrivateFile(sandbox.child("empty"), maxBytes: 0) == [])
        let big = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        try RawFiles.write(sandbox.child("big"), big)
        #expect(try SecureFileSystem.readPrivateFile(sandbox.child("big"), maxBytes: big.count) == big)
    }

    @Test(arguments: [mode_t(0o640), 0o604, 0o660, 0o606, 0o644, 0o610, 0o601])
    func refusesGroupOrWorldBits(mode: mode_t) throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("secret")
        try RawFiles.write(path, [1, 2, 3], mode: mode)
        let error = expectFileSystemError(.insecurePermissions) { try SecureFileSystem.readPrivateFile(path, maxBytes: 64) }
        #expect(error?.path == path)
        #expect(error?.fix?.contains("chmod 600 \(path)") == true)
        #expect(error?.message.contains(String(mode, radix: 8)) == true)
    }

    @Test func refusesSymlinkToGoodFile() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("real"), [1, 2, 3])
        try RawFiles.symlink(sandbox.child("link"), to: sandbox.child("real"))
        let error = expectFileSystemError(.insecurePermissions) {
            try SecureFileSystem.readPrivateFile(sandbox.child("link"), maxBytes: 64)
        }
        #expect(error?.message.lowercased().contains("symbolic link") == true)
    }

    @Test func refusesHardLinkedFile() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("a"), [1, 2, 3])
        #expect(link(sandbox.child("a"), sandbox.child("b")) == 0)
        let error = expectFileSystemError(.insecurePermissions) {
            try SecureFileSystem.readPrivateFile(sandbox.child("a"), maxBytes: 64)
        }
        #expect(error?.message.contains("2 hard links") == true)
        // With the second name gone the same file is accepted again.
        #expect(unlink(sandbox.child("b")) == 0)
        #expect(try SecureFileSystem.readPrivateFile(sandbox.child("a"), maxBytes: 64) == [1, 2, 3])
    }

    @Test func refusesDirectory() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.makeDirectory(sandbox.child("d"), mode: 0o700)
        let error = expectFileSystemError(.insecurePermissions) {
            try SecureFileSystem.readPrivateFile(sandbox.child("d"), maxBytes: 64)
        }
        #expect(error?.message.contains("not a regular file") == true)
    }

    @Test func refusesFIFOWithoutBlocking() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        #expect(mkfifo(sandbox.child("fifo"), 0o600) == 0)
        // Without O_NONBLOCK this open would wait forever for a writer.
        expectFileSystemError(.insecurePermissions) { try SecureFileSystem.readPrivateFile(sandbox.child("fifo"), maxBytes: 64) }
    }

    @Test func refusesFileOverMaxBytes() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("f"), [UInt8](repeating: 7, count: 17))
        let error = expectFileSystemError(.corrupt) { try SecureFileSystem.readPrivateFile(sandbox.child("f"), maxBytes: 16) }
        #expect(error?.message.contains("larger than 16 bytes") == true)
    }

    @Test(.enabled(if: runningAsRoot, "only root can give a file to another user"))
    func refusesFileOwnedByAnotherUser() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("f"), [1])
        #expect(chown(sandbox.child("f"), 65534, 65534) == 0)
        let error = expectFileSystemError(.insecurePermissions) { try SecureFileSystem.readPrivateFile(sandbox.child("f"), maxBytes: 64) }
        #expect(error?.message.contains("uid 65534") == true)
        #expect(error?.fix?.contains("chown") == true)
    }

    @Test func missingFileIsNotFound() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        expectFileSystemError(.notFound) { try SecureFileSystem.readPrivateFile(sandbox.child("nope"), maxBytes: 64) }
        expectFileSystemError(.notFound) { try SecureFileSystem.readPrivateFile(sandbox.child("no/such/dir"), maxBytes: 64) }
    }

    @Test func existsSeesFilesDirectoriesAndDanglingLinks() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        #expect(!SecureFileSystem.exists(sandbox.child("f")))
        try RawFiles.write(sandbox.child("f"), [])
        #expect(SecureFileSystem.exists(sandbox.child("f")))
        #expect(SecureFileSystem.exists(sandbox.path))
        try RawFiles.symlink(sandbox.child("dangling"), to: sandbox.child("missing"))
        #expect(SecureFileSystem.exists(sandbox.child("dangling")))
        #expect(!SecureFileSystem.exists(sandbox.child("f/below-a-file")))
    }
}
