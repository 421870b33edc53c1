#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import CredentialVault

@Suite struct RemovalTests {
    @Test func removeFileRemovesAndReportsMissing() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("f"), [1])
        try SecureFileSystem.removeFile(sandbox.child("f"), ignoreMissing: false)
        #expect(!SecureFileSystem.exists(sandbox.child("f")))
        try SecureFileSystem.removeFile(sandbox.child("f"), ignoreMissing: true)
        try SecureFileSystem.removeFile(sandbox.child("no/such/dir/f"), ignoreMissing: true)
        expectFileSystemError(.notFound) { try SecureFileSystem.removeFile(sandbox.child("f"), ignoreMissing: false) }
    }

    @Test func removeFileRemovesLinkNotTarget() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("target"), [1])
        try RawFiles.symlink(sandbox.child("link"), to: sandbox.child("target"))
        try SecureFileSystem.removeFile(sandbox.child("link"), ignoreMissing: false)
        #expect(try sandbox.names() == ["target"])
    }

    @Test func removeStaleTemporaryFilesRemovesOnlyMatchingNames() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let stale = [".vault.tmp.0123456789abcdef", ".vault.tmp.fedcba9876543210"]
        let keep = [
            "vault", "vault.lock", ".vault.tmp.0123456789ABCDEF", ".vault.tmp.0123456789abcde",
            ".vault.tmp.0123456789abcdef0", ".vault.tmp.", ".vault.tmp.0123456789abcdeg", "vault.tmp.0123456789abcdef",
            ".other.tmp.0123456789abcdef", ".vault.bak.0123456789abcdef",
        ]
        for name in stale + keep { try RawFiles.write(sandbox.child(name), [1]) }
        // A directory with a matching name is not a leftover of ours: left alone.
        try RawFiles.makeDirectory(sandbox.child(".vault.tmp.aaaaaaaaaaaaaaaa"), mode: 0o700)
        #expect(SecureFileSystem.removeStaleTemporaryFiles(in: sandbox.path, for: "vault") == 2)
        #expect(try sandbox.names() == (keep + [".vault.tmp.aaaaaaaaaaaaaaaa"]).sorted())
        #expect(SecureFileSystem.removeStaleTemporaryFiles(in: sandbox.path, for: "vault") == 0)
        #expect(SecureFileSystem.removeStaleTemporaryFiles(in: sandbox.child("missing"), for: "vault") == 0)
    }

    @Test func temporaryNamesMatchTheirOwnPattern() throws {
        let name = try TemporaryFileName.make(for: "vault", path: "/x/vault")
        #expect(name.hasPrefix(".vault.tmp."))
        #expect(name.count == ".vault.tmp.".count + 16)
        #expect(TemporaryFileName.matches(name, for: "vault"))
        #expect(!TemporaryFileName.matches(name, for: "vaul"))
        #expect(try TemporaryFileName.make(for: "vault", path: "/x/vault") != name)
    }

    @Test func overwriteAndRemoveZeroesTheBytesThenUnlinks() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let path = sandbox.child("key")
        let secret = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 | 1) }
        try RawFiles.write(path, secret)
        // A descriptor opened before keeps the inode readable after the unlink.
        let witness = open(path, O_RDONLY | O_CLOEXEC)
        #expect(witness >= 0)
        defer { close(witness) }
        try SecureFileSystem.overwriteAndRemove(path)
        #expect(!SecureFileSystem.exists(path))
        var after = [UInt8](repeating: 0xAA, count: secret.count + 10)
        let count = after.withUnsafeMutableBytes { pread(witness, $0.baseAddress, $0.count, 0) }
        #expect(count == secret.count, "same length")
        #expect(after[0..<secret.count].allSatisfy { $0 == 0 }, "every byte zeroed")
    }

    @Test func overwriteAndRemoveRefusesSymlinkAndMissingFile() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.write(sandbox.child("target"), [1, 2, 3])
        try RawFiles.symlink(sandbox.child("link"), to: sandbox.child("target"))
        expectFileSystemError(.insecurePermissions) { try SecureFileSystem.overwriteAndRemove(sandbox.child("link")) }
        #expect(try RawFiles.read(sandbox.child("target")) == [1, 2, 3])
        #expect(SecureFileSystem.exists(sandbox.child("link")))
        expectFileSystemError(.notFound) { try SecureFileSystem.overwriteAndRemove(sandbox.child("missing")) }
        try RawFiles.makeDirectory(sandbox.child("dir"), mode: 0o700)
        expectFileSystemError(.io) { try SecureFileSystem.overwriteAndRemove(sandbox.child("dir")) }
    }
}
