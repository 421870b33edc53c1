import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto
#if canImport(Glibc)
import Glibc
#endif

/// Writes into a full file system fail with a clear `.io` error ("No space left on device"),
/// leave the previous file as it was and leave no temporary file behind.
///
/// `.tmpfs` mounts a 256 KiB tmpfs and fills it, which needs root and mount(2) (a CI
/// container may refuse it); then it falls back to `.injected`, which fails every write of
/// the test's own task with ENOSPC through the package-only `IOFaultInjection` hook.
@Suite struct DiskFullTests {
    enum Method: String, CaseIterable, Sendable, CustomTestStringConvertible {
        case tmpfs, injected
        var testDescription: String { rawValue }
    }

    /// A directory whose file system can be made full, and emptied again.
    final class FullDisk {
        /// Where the test puts its vault or profile.
        let path: String
        /// False when the tmpfs could not be mounted and ENOSPC is injected instead.
        let mounted: Bool
        private var filled = false
        private var filler: String { (path as NSString).appendingPathComponent("filler") }

        init(in temp: TemporaryDirectory, method: Method) throws {
            path = temp.child("fs")
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false,
                                                    attributes: [.posixPermissions: 0o700])
            guard method == .tmpfs else {
                mounted = false
                return
            }
            if geteuid() != 0 {
                print("DiskFullTests: not root, so no tmpfs; injecting ENOSPC instead")
                mounted = false
            } else if mount("tmpfs", path, "tmpfs", 0, "size=256k,mode=0700") != 0 {
                print("DiskFullTests: mounting a tmpfs failed (\(String(cString: strerror(errno)))); injecting ENOSPC instead")
                mounted = false
            } else {
                mounted = true
            }
        }

        /// Fills the tmpfs until a write fails with ENOSPC (nothing to do when injecting).
        func fill() throws {
            guard mounted else { return }
            let descriptor = open(filler, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw TestFailure("cannot create the filler: errno \(errno)") }
            defer { close(descriptor) }
            let chunk = [UInt8](repeating: 0xAB, count: 4096)
            for size in [4096, 1] {
                while true {
                    let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, size) }
                    if written > 0 { continue }
                    guard errno == ENOSPC else { throw TestFailure("filling failed with errno \(errno), not ENOSPC") }
                    break
                }
            }
            filled = true
        }

        /// Runs `body` while the disk is full: as is on the filled tmpfs, or with ENOSPC injected.
        func whileFull<T>(_ body: () throws -> T) rethrows -> T {
            if mounted {
                precondition(filled, "call fill() first")
                return try body()
            }
            return try IOFaultInjection.$failingWritesErrno.withValue(ENOSPC, operation: body)
        }

        /// Frees the space again.
        func free() throws {
            guard mounted, filled else { return }
            try FileManager.default.removeItem(atPath: filler)
            filled = false
        }

        /// Unmounts the tmpfs (lazily, so a file still open cannot keep it mounted).
        func release() {
            if mounted { _ = umount2(path, Int32(MNT_DETACH)) }
        }
    }

    /// Names in `directory` that look like a write in progress.
    static func temporaryFiles(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.hasPrefix(".") && $0.contains(".tmp.") }
    }

    static func expectNoSpaceError(_ error: VaultError?, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error?.message.lowercased().contains("no space left") == true,
                "message: \(error?.message ?? "none")", sourceLocation: sourceLocation)
    }

    @Test(arguments: Method.allCases)
    func vaultWritesOnAFullDiskFailCleanly(method: Method) throws {
        let temp = try TemporaryDirectory("vault-disk-full")
        defer { temp.cleanUp() }
        let disk = try FullDisk(in: temp, method: method)
        defer { disk.release() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let directory = (disk.path as NSString).appendingPathComponent("v")
        let store = try SecretStore.create(in: directory, key: key, options: .testing())
        try store.put(NewEntry(name: "kept", secret: secret("written before the disk filled")))
        let vaultPath = store.vaultPath
        let before = try Data(contentsOf: URL(fileURLWithPath: vaultPath))

        try disk.fill()
        let large = SecureBytes(copying: [UInt8](repeating: 7, count: 64 * 1024))
        let writes: [(String, () throws -> Void)] = [
            ("put", { try store.put(NewEntry(name: "new", secret: large)) }),
            ("remove", { try store.remove(named: "kept") }),
            ("rotate", { try store.rotate() }),
            ("changeKey", { try store.changeKey(to: key) }),
        ]
        for (operation, write) in writes {
            let error = disk.whileFull { expectVaultError(.io) { try write() } }
            Self.expectNoSpaceError(error)
            #expect(try Data(contentsOf: URL(fileURLWithPath: vaultPath)) == before, "\(operation) changed the vault")
            #expect(try Self.temporaryFiles(in: directory).isEmpty, "\(operation) left a temporary file")
        }

        // The old vault opens, whole, in a new store too.
        let reopened = try SecretStore.open(in: directory, key: key, options: .testing())
        #expect(try reopened.list().map(\.name) == ["kept"])
        #expect(try reopened.secret(named: "kept") == secret("written before the disk filled"))
        #expect(try reopened.verify().isIntact)

        // With space again, the same write goes through and leaves nothing behind.
        try disk.free()
        try store.put(NewEntry(name: "new", secret: large))
        #expect(try reopened.list().map(\.name) == ["kept", "new"])
        #expect(try Self.temporaryFiles(in: directory).isEmpty)
    }

    @Test(arguments: Method.allCases)
    func creatingAVaultOnAFullDiskLeavesNoVault(method: Method) throws {
        let temp = try TemporaryDirectory("vault-disk-full")
        defer { temp.cleanUp() }
        let disk = try FullDisk(in: temp, method: method)
        defer { disk.release() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let directory = (disk.path as NSString).appendingPathComponent("v")
        try disk.fill()
        let error = disk.whileFull { expectVaultError(.io) { try SecretStore.create(in: directory, key: key, options: .testing()) } }
        Self.expectNoSpaceError(error)
        #expect(!SecretStore.exists(in: directory))
        #expect(try Self.temporaryFiles(in: directory).isEmpty)
        try disk.free()
        _ = try SecretStore.create(in: directory, key: key, options: .testing())
        #expect(SecretStore.exists(in: directory))
    }

    @Test(arguments: Method.allCases)
    func profileWritesOnAFullDiskFailCleanly(method: Method) throws {
        let temp = try TemporaryDirectory("vault-disk-full")
        defer { temp.cleanUp() }
        let disk = try FullDisk(in: temp, method: method)
        defer { disk.release() }
        let directory = (disk.path as NSString).appendingPathComponent("p")
        let store = ProfileStore(directory: directory, lockTimeout: .seconds(5))
        let original = Profile(anonymousID: "anon-before", user: User(id: "user-1"), settings: ["theme": "dark"])
        try store.save(original)
        let before = try Data(contentsOf: URL(fileURLWithPath: store.path))

        try disk.fill()
        let big = JSONValue.string(String(repeating: "x", count: 16 * 1024))
        let writes: [(String, () throws -> Void)] = [
            ("update", { try store.update { $0.settings["big"] = big } }),
            ("save", { try store.save(Profile(anonymousID: "anon-after", settings: ["big": big])) }),
        ]
        for (operation, write) in writes {
            let error = disk.whileFull { expectVaultError(.io) { try write() } }
            Self.expectNoSpaceError(error)
            #expect(try Data(contentsOf: URL(fileURLWithPath: store.path)) == before, "\(operation) changed the profile")
            #expect(try Self.temporaryFiles(in: directory).isEmpty, "\(operation) left a temporary file")
            #expect(try store.load() == original)
        }

        try disk.free()
        try store.update { $0.settings["big"] = big }
        #expect(try store.load()?.settings["big"] == big)
        #expect(try Self.temporaryFiles(in: directory).isEmpty)
    }
}
