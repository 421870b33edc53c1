#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Testing
@testable import CredentialVault

/// Modes must not depend on the umask: 000 would make files world-readable if the code
/// relied on it; 077/777 would strip the owner's own bits without the explicit fchmod.
/// Each case runs on a thread with a private umask (see `IsolatedUmask`); the suite is
/// serialized in case the fallback has to change the process umask.
@Suite(.serialized) struct UmaskTests {
    @Test func umaskIsConfinedToTheWorkerThread() throws {
        let outside = IsolatedUmask.currentThreadMask()
        let isolated = try IsolatedUmask.run(0) {
            #expect(IsolatedUmask.currentThreadMask() == 0)
        }
        if isolated { #expect(IsolatedUmask.currentThreadMask() == outside) }
    }

    @Test(arguments: [mode_t(0o000), 0o077, 0o777])
    func createdFilesDirectoriesAndLocksArePrivate(mask: mode_t) throws {
        let sandbox = try FileSystemSandbox()
        defer { sandbox.remove() }
        let root = sandbox.path
        try IsolatedUmask.run(mask) {
            try SecureFileSystem.ensurePrivateDirectory(root + "/parent/vault", create: true)
            try SecureFileSystem.writeFileAtomically(root + "/parent/vault/data", contents: [1, 2, 3])
            try SecureFileSystem.createFileExclusively(root + "/parent/vault/key", contents: [4])
            try FileLock.acquire(path: root + "/parent/vault/vault.lock", mode: .exclusive, timeout: .zero).release()
        }
        #expect(try RawFiles.mode(root + "/parent") == 0o700)
        #expect(try RawFiles.mode(root + "/parent/vault") == 0o700)
        #expect(try RawFiles.mode(root + "/parent/vault/data") == 0o600)
        #expect(try RawFiles.mode(root + "/parent/vault/key") == 0o600)
        #expect(try RawFiles.mode(root + "/parent/vault/vault.lock") == 0o600)
        #expect(try SecureFileSystem.readPrivateFile(root + "/parent/vault/data", maxBytes: 8) == [1, 2, 3])
    }
}
