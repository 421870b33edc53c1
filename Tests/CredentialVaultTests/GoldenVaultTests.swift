import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

/// Golden vault files written once by format 1.0 (`v1-*`), 2.0 (`v2-*`) and 3.0 (`v3-*`) and committed.
/// They must open, with exactly these contents, in every later version. Never regenerate
/// them: a change that breaks them is a format break and needs a new major version that
/// still reads these.
@Suite(.blockingWork) struct GoldenVaultTests {
    struct Expected {
        let owner: String, name: String, kind: EntryKind, label: String?
        let expiresAt: Date?, transferable: Bool, secret: [UInt8]
    }

    static let created = Date(timeIntervalSince1970: 1_800_000_000)

    static let richEntries: [Expected] = [
        Expected(owner: "", name: "github", kind: .accessToken, label: "GitHub CLI",
                 expiresAt: Date(timeIntervalSince1970: 1_800_003_600), transferable: true,
                 secret: Array("gho_16C7e42F292c6912E7710c838347Ae178B4a".utf8)),
        Expected(owner: "", name: "refresh", kind: .refreshToken, label: nil, expiresAt: nil, transferable: true,
                 secret: Array("r-1".utf8)),
        Expected(owner: "guest:anon-1", name: "cart", kind: .generic, label: "Guest cart", expiresAt: nil,
                 transferable: false, secret: [0, 1, 2, 0, 255]),
        Expected(owner: "user:u1", name: "名前 🔑", kind: .password, label: "", expiresAt: nil, transferable: true,
                 secret: Array("pässwörd".utf8)),
    ]

    static let goldenFiles: [(file: String, key: String, entries: [Expected], standardPolicy: Bool)] = [
        ("v1-keyfile.vault", "alice.key", richEntries, false),
        ("v1-empty.vault", "bob.key", [], false),
        ("v1-passphrase-logn10.vault", "alice.passphrase", Array(richEntries.prefix(2)), false),
        ("v1-passphrase-logn17.vault", "alice.passphrase", Array(richEntries.prefix(1)), true),
    ] + goldenFilesV2 + goldenFilesV3

    /// The format 2.0 golden files (written by `writeGoldenFiles` with VAULT_WRITE_GOLDEN=v2).
    static let goldenFilesV2: [(file: String, key: String, entries: [Expected], standardPolicy: Bool)] = [
        ("v2-keyfile.vault", "alice.key", richEntries, false),
        ("v2-empty.vault", "bob.key", [], false),
        ("v2-passphrase-logn10.vault", "alice.passphrase", Array(richEntries.prefix(2)), false),
        ("v2-passphrase-logn17.vault", "alice.passphrase", Array(richEntries.prefix(1)), true),
    ]

    /// The format 3.0 golden files (written by `writeGoldenFiles` with VAULT_WRITE_GOLDEN=v3).
    static let goldenFilesV3: [(file: String, key: String, entries: [Expected], standardPolicy: Bool)] = [
        ("v3-keyfile.vault", "alice.key", richEntries, false),
        ("v3-empty.vault", "bob.key", [], false),
        ("v3-passphrase-logn10.vault", "alice.passphrase", Array(richEntries.prefix(2)), false),
        ("v3-passphrase-logn17.vault", "alice.passphrase", Array(richEntries.prefix(1)), true),
    ]

    static func key(_ name: String, _ temp: TemporaryDirectory) throws -> VaultKey {
        name.hasSuffix(".passphrase") ? try Fixtures.passphrase() : try Fixtures.keyFile(name, in: temp)
    }

    /// The standard KDF policy (for the logN 17 files), without rollback memory.
    static var standardOptions: SecretStore.Options {
        var options = SecretStore.Options(clock: { created })
        options.rollbackMemory = .disabled
        return options
    }

    static func options(standard: Bool) -> SecretStore.Options {
        standard ? Self.standardOptions : .testing(now: created)
    }

    @Test(arguments: goldenFiles.map(\.file))
    func goldenFileOpensWithExactContents(_ file: String) throws {
        let golden = try #require(Self.goldenFiles.first { $0.file == file })
        let temp = try TemporaryDirectory("vault-golden")
        defer { temp.cleanUp() }
        let directory = temp.child("v")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        _ = try Fixtures.privateCopy("golden/\(file)", into: temp, as: "v/\(SecretStore.FileNames.vault)")
        let store = try SecretStore.open(in: directory, key: Self.key(golden.key, temp), options: Self.options(standard: golden.standardPolicy))
        let listed = try store.list()
        #expect(listed.count == golden.entries.count)
        for expected in golden.entries {
            let entry = try store.entry(named: expected.name, owner: expected.owner)
            #expect(entry.metadata.kind == expected.kind)
            #expect(entry.metadata.label == expected.label)
            #expect(entry.metadata.expiresAt == expected.expiresAt)
            #expect(entry.metadata.transferable == expected.transferable)
            #expect(entry.metadata.createdAt == Self.created)
            #expect(entry.secret == SecureBytes(copying: expected.secret))
        }
        #expect(try store.verify().isIntact)
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        #expect(bytes == Array(try Fixtures.data("golden/\(file)")), "reading changed the file")
        #expect(bytes[8] == (file.hasPrefix("v1-") ? 1 : file.hasPrefix("v2-") ? 2 : 3))
    }

    @Test func independentPythonReaderDecryptsTheGoldenFiles() throws {
        guard Self.pythonCryptographyAvailable() else {
            if ProcessInfo.processInfo.environment["CI"] == "true" {
                Issue.record("python3 with the 'cryptography' package is required in CI")
            } else {
                print("skipped: python3 'cryptography' not installed")
            }
            return
        }
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/decrypt-vault.py").path
        for golden in Self.goldenFiles {
            let vault = try Fixtures.privateCopy("golden/\(golden.file)", into: temp)
            let keyPath = try Fixtures.privateCopy("keys/\(golden.key)", into: temp)
            let flag = golden.key.hasSuffix(".passphrase") ? "--passphrase-file" : "--key-file"
            let output = try Self.run("/usr/bin/env", ["python3", script, vault, flag, keyPath])
            let decoded = try JSONDecoder().decode(PythonDump.self, from: output)
            #expect(decoded.entries.count == golden.entries.count, "\(golden.file)")
            for expected in golden.entries {
                let match = decoded.entries.first { $0.owner == expected.owner && $0.name == expected.name }
                #expect(match.flatMap { Data(base64Encoded: $0.secretBase64) } == Data(expected.secret), "\(golden.file) \(expected.name)")
                #expect(match?.kind == expected.kind.rawValue)
            }
        }
    }

    struct PythonDump: Decodable {
        struct Entry: Decodable { let owner: String, name: String, kind: String, secretBase64: String }
        let entries: [Entry]
    }

    static func pythonCryptographyAvailable() -> Bool {
        (try? run("/usr/bin/env", ["python3", "-c", "import cryptography.hazmat.primitives.ciphers.aead"])) != nil
    }

    static func run(_ executable: String, _ arguments: [String]) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw TestFailure("\(arguments) exited \(process.terminationStatus)") }
        return data
    }

    /// Writes the golden files of the current format into the source tree. Run once, by hand, with
    /// `VAULT_WRITE_GOLDEN=v3 swift test --filter writeGoldenFiles`; never again for v3 (v1 was
    /// written by format 1.0 with `VAULT_WRITE_GOLDEN=1`, v2 by 2.0 with `VAULT_WRITE_GOLDEN=v2`;
    /// this build makes new vaults as v3).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["VAULT_WRITE_GOLDEN"] == "v3"))
    func writeGoldenFiles() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let target = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/golden")
        for golden in Self.goldenFilesV3 {
            let directory = temp.child(golden.file)
            let store = try SecretStore.create(in: directory, key: Self.key(golden.key, temp),
                                               options: Self.options(standard: golden.standardPolicy))
            try store.update { transaction in
                for entry in golden.entries {
                    try transaction.put(NewEntry(name: entry.name, owner: entry.owner, secret: SecureBytes(copying: entry.secret),
                                                 kind: entry.kind, label: entry.label, expiresAt: entry.expiresAt,
                                                 transferable: entry.transferable))
                }
            }
            let destination = target.appendingPathComponent(golden.file)
            #expect(!FileManager.default.fileExists(atPath: destination.path), "golden files are never regenerated")
            try FileManager.default.copyItem(atPath: store.vaultPath, toPath: destination.path)
        }
    }
}
