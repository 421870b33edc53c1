#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
@testable import CredentialVault

/// Directory creation walks by descriptor (`mkdirat`, `openat(O_NOFOLLOW)`, `fchmod`), so a
/// symlink swapped in at any moment never redirects a mode change, and a vault below a
/// folder that others can rearrange is refused.
@Suite struct DirectoryCreationRaceTests {
    /// A flag the swapping thread polls.
    final class StopFlag: Sendable {
        let stopped = Atomic<Bool>(false)
        let swaps = Atomic<Int>(0)
    }

    @Test func symlinkSwappedInALoopNeverChangesAnotherFilesMode() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let victim = sandbox.child("victim")
        try RawFiles.write(victim, [42], mode: 0o644)
        try RawFiles.makeDirectory(sandbox.child("shared"), mode: 0o700)
        let target = sandbox.child("shared/vault")
        let parked = sandbox.child("shared/parked")
        let flag = StopFlag()
        // The attacker: whenever the new directory exists, move it aside and put a symlink
        // to the victim in its place, then clear the way for the next attempt.
        let attacker = Thread {
            let deadline = Date().addingTimeInterval(10)
            var rounds = 0
            while !flag.stopped.load(ordering: .relaxed) && rounds < 2_000_000 && Date() < deadline {
                rounds += 1
                if rename(target, parked) == 0 {
                    _ = symlink(victim, target)
                    flag.swaps.add(1, ordering: .relaxed)
                    _ = rmdir(parked)
                } else {
                    _ = unlink(target)
                }
            }
        }
        attacker.start()
        let started = Date()
        var attempts = 0
        var created = 0
        while attempts < 3_000 && Date().timeIntervalSince(started) < 4 {
            attempts += 1
            if (try? SecureFileSystem.ensurePrivateDirectory(target, create: true)) != nil { created += 1 }
            _ = rmdir(target)
            _ = unlink(target)
            #expect(try RawFiles.mode(victim) == 0o644)
            if try RawFiles.mode(victim) != 0o644 { break }
        }
        flag.stopped.store(true, ordering: .relaxed)
        while !attacker.isFinished { usleep(1_000) }
        #expect(try RawFiles.mode(victim) == 0o644, "the victim's mode was changed through the swapped symlink")
        #expect(try RawFiles.read(victim) == [42])
        #expect(attempts > 0)
        #expect(flag.swaps.load(ordering: .relaxed) > 0, "the attacker never got to swap: the test proved nothing")
    }

    @Test func ancestorWritableByOthersWithoutStickyBitIsRefused() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let open = sandbox.child("open")
        try RawFiles.makeDirectory(open, mode: 0o777)
        // Creating below it, and checking an existing private directory below it, are both refused.
        let error = expectFileSystemError(.insecurePermissions) {
            try SecureFileSystem.ensurePrivateDirectory(open + "/v", create: true)
        }
        #expect(error?.message.contains("sticky") == true)
        #expect(error?.path == open)
        #expect(!SecureFileSystem.exists(open + "/v"), "nothing is created below an unsafe folder")
        try RawFiles.makeDirectory(open + "/v", mode: 0o700)
        expectFileSystemError(.insecurePermissions) { try SecureFileSystem.checkPrivateDirectory(open + "/v/") }
        // Deeper too: every ancestor counts, not only the parent.
        try RawFiles.makeDirectory(open + "/v/w", mode: 0o700)
        expectFileSystemError(.insecurePermissions) { try SecureFileSystem.checkPrivateDirectory(open + "/v/w") }
        // Group-writable counts as well.
        #expect(chmod(open, 0o770) == 0)
        expectFileSystemError(.insecurePermissions) { try SecureFileSystem.checkPrivateDirectory(open + "/v") }
    }

    @Test func stickyWorldWritableAncestorIsAccepted() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let shared = sandbox.child("tmp-like")
        try RawFiles.makeDirectory(shared, mode: 0o1777)
        try SecureFileSystem.ensurePrivateDirectory(shared + "/a/v", create: true)
        #expect(try RawFiles.mode(shared + "/a/v") == 0o700)
        try SecureFileSystem.checkPrivateDirectory(shared + "/a/v")
    }

    @Test func storeCreationBelowAnUnsafeFolderIsRefused() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let open = temp.child("open")
        try RawFiles.makeDirectory(open, mode: 0o777)
        let key = try Fixtures.keyFile("alice.key", in: temp)
        expectVaultError(.insecurePermissions) { try SecretStore.create(in: open + "/v", key: key, options: .testing()) }
        #expect(!SecureFileSystem.exists(open + "/v"))
    }

    @Test func symlinkedAncestorIsResolvedOnceAndThenWalkedWithoutFollowing() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.makeDirectory(sandbox.child("real"), mode: 0o700)
        try RawFiles.symlink(sandbox.child("home"), to: sandbox.child("real"))
        // A symlink above the vault directory (a home reached through a link) works ...
        try SecureFileSystem.ensurePrivateDirectory(sandbox.child("home/v"), create: true)
        #expect(try RawFiles.mode(sandbox.child("real/v")) == 0o700)
        // A relative path going up through a missing folder is refused before anything is made.
        expectFileSystemError(.invalidInput) { try SecureFileSystem.ensurePrivateDirectory("missing/../v", create: true) }
    }

    @Test(.enabled(if: runningAsRoot, "only root can give a directory to another user"))
    func ancestorOwnedByAnotherUserIsRefused() throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        try RawFiles.makeDirectory(sandbox.child("theirs"), mode: 0o755)
        try RawFiles.makeDirectory(sandbox.child("theirs/v"), mode: 0o700)
        #expect(chown(sandbox.child("theirs"), 65534, 65534) == 0)
        let error = expectFileSystemError(.insecurePermissions) { try SecureFileSystem.checkPrivateDirectory(sandbox.child("theirs/v")) }
        #expect(error?.message.contains("uid 65534") == true)
    }
}
