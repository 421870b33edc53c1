import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

/// Kind 6 (`totp`) in the vault file: header flag bit 2 says a file holds one, so a release that
/// knows kinds 1–5 only refuses it as an unsupported version (its check of the header flags) rather
/// than calling the index tampered; a file without one is written exactly as before.
@Suite(.blockingWork) struct TOTPKindFormatTests {
    static let uri = "otpauth://totp/x?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"

    /// The header's flags (bytes 10–11, big-endian).
    static func headerFlags(_ store: SecretStore) throws -> UInt16 {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: store.vaultPath)).prefix(12))
        return UInt16(bytes[10]) << 8 | UInt16(bytes[11])
    }

    @Test func theFlagIsSetExactlyWhileATOTPEntryIsStored() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "plain", secret: secret("x"), kind: .password))
        #expect(try Self.headerFlags(store) & VaultFileLayout.headerFlagNewerKinds == 0)
        try store.put(NewEntry(name: "acme", secret: secret(Self.uri), kind: .totp))
        #expect(try Self.headerFlags(store) & VaultFileLayout.headerFlagNewerKinds != 0)
        // What a release that knows only bits 0 and 1 does with this header: unsupported version.
        #expect(try Self.headerFlags(store) & ~(VaultFileLayout.headerFlagHistory | VaultFileLayout.headerFlagAttributes) != 0)
        let reopened = try SecretStore.open(in: store.directory, key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        #expect(try reopened.metadata(named: "acme").kind == .totp)
        #expect(try reopened.entry(named: "acme").secret == secret(Self.uri))
        try reopened.remove(named: "acme")
        #expect(try Self.headerFlags(reopened) & VaultFileLayout.headerFlagNewerKinds == 0, "no totp entry left")
    }

    @Test func onlyKindsAboveFiveAreNewer() {
        #expect(EntryKind.allCases.filter(\.isNewerThanOriginalKinds) == [.totp])
        #expect(EntryKind.totp.code == 6)
        #expect(EntryKind(code: 6) == .totp && EntryKind(code: 7) == nil)
    }

    /// A version 2 file stays readable by older releases, so it does not take a totp entry.
    @Test func aVersion2VaultRefusesATOTPEntryUntilUpgraded() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try FormatV2Tests.store(version: 2, name: "v2", in: temp)
        let error = expectVaultError(.invalidInput) { try store.put(NewEntry(name: "acme", secret: secret(Self.uri), kind: .totp)) }
        #expect(error?.topic == .kindNeedsNewerFormat)
        #expect(error?.message.contains("format version 2") == true)
        #expect(try store.list().isEmpty, "nothing written")
        #expect(try store.upgradeFormat().version == 3)
        try store.put(NewEntry(name: "acme", secret: secret(Self.uri), kind: .totp))
        #expect(try store.metadata(named: "acme").kind == .totp)
    }

    @Test func theIndependentPythonReaderChecksTheFlagAndNamesTheKind() throws {
        guard GoldenVaultTests.pythonCryptographyAvailable() else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("python3 with 'cryptography' is required in CI") }
            return
        }
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try SecretStore.create(in: temp.child("v"), key: Fixtures.keyFile("alice.key", in: temp),
                                           options: .testing())
        try store.put(NewEntry(name: "acme", secret: secret(Self.uri), kind: .totp))
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/decrypt-vault.py").path
        let keyPath = try Fixtures.privateCopy("keys/alice.key", into: temp)
        // The same contents without the history section (header flag bit 0), which the script does not read.
        let key = VaultKey.keyMaterial(SecureBytes(copying: Array(try Fixtures.data("keys/alice.key"))))
        var (image, keys, kek) = try VaultFileCodec.decode(Array(try Data(contentsOf: URL(fileURLWithPath: store.vaultPath))), path: nil,
                                                           kekProvider: { try FuzzContext.deriveKEK(key: key, slot: $0) },
                                                           dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
        image.history = nil
        let withoutHistory = temp.child("without-history.vault")
        let encoded = try VaultFileCodec.encode(image, keys: keys, kek: kek)
        #expect(UInt16(encoded[10]) << 8 | UInt16(encoded[11]) == VaultFileLayout.headerFlagNewerKinds)
        try Data(encoded).write(to: URL(fileURLWithPath: withoutHistory))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, withoutHistory, "--key-file", keyPath]
        let outputPipe = Pipe(), errorPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        try process.run()
        let output = outputPipe.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: errorPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the reader failed: \(errors)")
        #expect(String(decoding: output, as: UTF8.self).contains("\"kind\": \"totp\""))
    }
}
