import Foundation
import Synchronization
import Testing
@testable import CredentialVault
import VaultCrypto

/// Entry history (issue 39, point 3): replaced and removed values kept sealed in the vault file,
/// at most the vault's limit per entry, never entries themselves.
@Suite struct EntryHistoryTests {
    /// A clock the test moves on, one minute per write.
    final class SteppingClock: Sendable {
        private let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
        func next() -> Date { now.withLock { $0 = $0.addingTimeInterval(60); return $0 } }
    }

    static func store(_ temp: TemporaryDirectory, clock: SteppingClock = SteppingClock()) throws -> SecretStore {
        var options = SecretStore.Options.testing()
        options.clock = { clock.next() }
        return try SecretStore.create(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: options)
    }

    @Test func theLimitIsRespectedAndTheOldestDropped() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        try store.setHistoryLimit(3)
        for n in 1...6 { try store.update(as: .add) { try $0.put(NewEntry(name: "api", secret: secret("value-\(n)")), replace: true) } }

        let history = try store.history(named: "api")
        #expect(history.limit == 3)
        #expect(history.versions.map(\.version) == [6, 5, 4, 3])
        #expect(history.versions.map(\.isCurrent) == [true, false, false, false])
        #expect(history.versions.allSatisfy { $0.writer == "add" })
        #expect(history.versions[1].byteCount == 7)
        #expect(history.versions[1].replacedAt == history.versions[0].writtenAt)
        // Version 2 was dropped: it cannot be restored.
        expectVaultError(.notFound) { try store.restore(named: "api", version: 2) }
        #expect(try store.restore(named: "api", version: 3).secretByteCount == 7)
        #expect(try store.secret(named: "api") == secret("value-3"))

        // Lowering the limit drops the extra versions at once.
        try store.setHistoryLimit(1)
        #expect(try store.history(named: "api").versions.map(\.version) == [7, 6])
        expectVaultError(.invalidInput) { try store.setHistoryLimit(HistoryPolicy.maximumLimit + 1) }
        expectVaultError(.invalidInput) { try store.setHistoryLimit(-1) }
    }

    @Test func theDefaultLimitIsTen() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        for n in 1...13 { try store.put(NewEntry(name: "api", secret: secret("v\(n)")), replace: true) }
        let history = try store.history(named: "api")
        #expect(history.limit == HistoryPolicy.defaultLimit)
        #expect(history.versions.count == 11)
        #expect(history.versions.last?.version == 3)
    }

    @Test func restoreIsANewWriteThatKeepsTheCurrentValue() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        try store.update(as: .add) { try $0.put(NewEntry(name: "db", secret: secret("first"), kind: .password, label: "one")) }
        try store.update(as: .import) { try $0.put(NewEntry(name: "db", secret: secret("second"), kind: .generic), replace: true) }

        let restored = try store.restore(named: "db", version: 1)
        #expect(restored.kind == .password)
        #expect(restored.label == "one")
        #expect(try store.secret(named: "db") == secret("first"))
        let history = try store.history(named: "db")
        #expect(history.versions.map(\.version) == [3, 2, 1])
        #expect(history.versions.map(\.writer) == ["restore of version 1", "import", "add"])
        // The value it replaced is kept and can come back in turn.
        try store.restore(named: "db", version: 2)
        #expect(try store.secret(named: "db") == secret("second"))
        // The current version is not a kept one.
        let current = expectVaultError(.invalidInput) { try store.restore(named: "db", version: 4) }
        #expect(current?.message.contains("current") == true)
        expectVaultError(.notFound) { try store.restore(named: "db", version: 99) }
        expectVaultError(.notFound) { try store.restore(named: "nothing", version: 1) }
    }

    @Test func aRemovedEntryComesBackThroughRestoreAndIsNeverListed() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        try store.put(NewEntry(name: "kept", secret: secret("k")))
        try store.put(NewEntry(name: "gone", secret: secret("old secret")))
        try store.remove(named: "gone")

        // Not an entry: not listed, no metadata, no secret (what `vault get` reads).
        #expect(try store.list().map(\.name) == ["kept"])
        expectVaultError(.notFound) { try store.metadata(named: "gone") }
        expectVaultError(.notFound) { try store.secret(named: "gone") }
        expectVaultError(.notFound) { try store.entry(named: "gone") }
        #expect(try store.snapshot { $0.owners } == [""])
        #expect(try store.verify().entriesChecked == 1)

        let history = try store.history(named: "gone")
        #expect(history.versions.map(\.version) == [1])
        #expect(history.versions[0].isCurrent == false)
        try store.restore(named: "gone", version: 1)
        #expect(try store.secret(named: "gone") == secret("old secret"))
        #expect(try store.history(named: "gone").versions.map(\.version) == [2, 1])
    }

    @Test func tokensAndSessionEntriesKeepNoHistory() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        let user = SessionNamespaces.user("u1")
        for n in 1...3 {
            try store.update(as: .refresh) { transaction in
                try transaction.put(NewEntry(name: SessionNamespaces.Reserved.refreshToken, owner: user, secret: secret("rt-\(n)"),
                                             kind: .refreshToken), replace: true)
                try transaction.put(NewEntry(name: SessionNamespaces.Reserved.tokenInfo, owner: user, secret: secret("info-\(n)"),
                                             kind: .generic), replace: true)
                try transaction.put(NewEntry(name: "plain-token", secret: secret("at-\(n)"), kind: .accessToken), replace: true)
            }
        }
        try store.remove(named: "plain-token")
        // Nothing was kept, so nothing is in the file: not even a writer record.
        #expect(try store.snapshot { $0.image.history } == nil)
        #expect(try store.history(named: SessionNamespaces.Reserved.refreshToken, owner: user).versions.count == 1)
        expectVaultError(.notFound) { try store.history(named: "plain-token") }
    }

    @Test func signOutAndGuestRemovalLeaveNoHistoryOfTheOwner() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        let guest = SessionNamespaces.guest("anon")
        try store.put(NewEntry(name: "cart", owner: guest, secret: secret("one")))
        try store.put(NewEntry(name: "cart", owner: guest, secret: secret("two")), replace: true)
        try store.put(NewEntry(name: "note", owner: guest, secret: secret("n")))
        try store.remove(named: "note", owner: guest)
        #expect(try store.history(named: "cart", owner: guest).versions.count == 2)
        try store.update { $0.removeAll(owner: guest) }
        expectVaultError(.notFound) { try store.history(named: "cart", owner: guest) }
        expectVaultError(.notFound) { try store.history(named: "note", owner: guest) }
        #expect(try store.snapshot { $0.image.history?.records.isEmpty ?? true })
    }

    @Test func aMovedEntryTakesItsWriterAndLeavesNoHistoryBehind() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        let guest = SessionNamespaces.guest("anon"), user = SessionNamespaces.user("u1")
        try store.update(as: .add) { try $0.put(NewEntry(name: "cart", owner: guest, secret: secret("g1"))) }
        try store.update(as: .add) { try $0.put(NewEntry(name: "cart", owner: guest, secret: secret("g2")), replace: true) }
        try store.put(NewEntry(name: "cart", owner: user, secret: secret("u1")))
        try store.update { try $0.move(named: "cart", from: guest, to: user, replace: true) }
        expectVaultError(.notFound) { try store.history(named: "cart", owner: guest) }
        let history = try store.history(named: "cart", owner: user)
        #expect(history.versions.map(\.writer) == ["add", ""])
        try store.restore(named: "cart", owner: user, version: 1)
        #expect(try store.secret(named: "cart", owner: user) == secret("u1"))
    }

    @Test func historyOutlivesRotationAndKeyChangesButNotTheWrongKey() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        try store.put(NewEntry(name: "api", secret: secret("before")))
        try store.put(NewEntry(name: "api", secret: secret("after")), replace: true)
        try store.rotate()
        var options = SecretStore.Options.testing()
        options.allowsWeakPassphrase = true
        try store.changeKey(to: try Fixtures.keyFile("bob.key", in: temp))

        let wrong = expectVaultError(.wrongKey) {
            try SecretStore.open(in: temp.child("v"), key: try Fixtures.keyFile("alice.key", in: temp), options: .testing()).history(named: "api")
        }
        #expect(wrong != nil)
        let reopened = try SecretStore.open(in: temp.child("v"), key: try Fixtures.keyFile("bob.key", in: temp), options: .testing())
        #expect(try reopened.verify().failures.isEmpty)
        try reopened.restore(named: "api", version: 1)
        #expect(try reopened.secret(named: "api") == secret("before"))
    }

    @Test func aKeptVersionIsBoundToItsEntryAndNumber() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        try store.put(NewEntry(name: "a", secret: secret("a1")))
        try store.put(NewEntry(name: "a", secret: secret("a2")), replace: true)
        let (version, vaultID, keys) = try store.snapshot { view in
            (try #require(view.image.history?.records.first?.versions.first), view.image.vaultID, view.keys)
        }
        #expect(try version.open(owner: "", name: "a", vaultID: vaultID, key: keys.history, path: nil) == secret("a1"))
        expectVaultError(.tampered) { try version.open(owner: "", name: "b", vaultID: vaultID, key: keys.history, path: nil) }
        var renumbered = version
        renumbered.version = 2
        expectVaultError(.tampered) { try renumbered.open(owner: "", name: "a", vaultID: vaultID, key: keys.history, path: nil) }
        // Nor does it open as an entry's value (another key and AAD).
        let asEntry = SealedEntry(name: "a", owner: "", kind: .generic, label: nil, createdMilliseconds: 0, updatedMilliseconds: 0,
                                  expiresMilliseconds: nil, transferable: true, nonce: version.nonce, ciphertext: version.ciphertext[...],
                                  tag: version.tag)
        expectVaultError(.tampered) { try asEntry.open(vaultID: vaultID, key: keys.value, path: nil) }
    }

    @Test func theHeaderFlagIsSetOnlyWithHistoryAndOnlyInVersion3() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        let path = temp.child("v") + "/secrets.vault"
        func flags() throws -> UInt16 {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            return UInt16(bytes[10]) << 8 | UInt16(bytes[11])
        }
        #expect(try flags() == 0)
        try store.put(NewEntry(name: "api", secret: secret("one")))
        #expect(try flags() == VaultFileLayout.headerFlagHistory)
        try store.setHistoryLimit(0)
        #expect(try flags() == VaultFileLayout.headerFlagHistory)   // the limit itself is kept
        try store.setHistoryLimit(HistoryPolicy.defaultLimit)
        #expect(try flags() == 0)   // back to a file without the section (no writer records: none were kept at 0)

        // An unknown header flag bit is an unsupported version, before any key work.
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        bytes[10] = 0x80   // bit 15: no release knows it
        let digest = try VaultCrypto.SHA256.hash(Array(bytes[0..<174]))
        bytes.replaceSubrange(174..<182, with: digest[0..<8])
        expectVaultError(.unsupportedVersion) { try VaultFileHeader.parse(bytes, path: nil) }
    }

    @Test func aCutOrFlippedHistorySectionIsRefusedNeverTrusted() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        try store.update(as: .add) { try $0.put(NewEntry(name: "api", secret: secret("one"), label: "L", expiresAt: Date(timeIntervalSince1970: 1))) }
        try store.put(NewEntry(name: "api", secret: secret("two")), replace: true)
        try store.put(NewEntry(name: "b", secret: secret("b")))
        try store.remove(named: "b")
        let image = try store.snapshot { $0.image }
        let history = try #require(image.history)
        let stateKey = try #require(image.stateKey)
        let unpadded = IndexCodec.encodeV2(image.entries, vaultID: image.vaultID, generation: image.generation, stateKey: stateKey,
                                           history: history)
        let values = image.entries.reduce(into: [UInt8]()) { $0.append(contentsOf: $1.ciphertext) }
        func region(_ values: [UInt8]) -> ArraySlice<UInt8> {
            (values + [UInt8](repeating: 0, count: VaultFileLayout.paddedUp(values.count + 32) - 32 - values.count))[...]
        }
        func padded(_ plain: [UInt8]) -> [UInt8] { plain + [UInt8](repeating: 0, count: IndexCodec.paddedV2Length(unpadded: plain.count) - plain.count) }
        let decoded = try IndexCodec.decodeV2(padded(unpadded), vaultID: image.vaultID, valuesRegion: region(values), regionOverhead: 32,
                                              hasHistory: true, path: nil)
        #expect(decoded.history == history)
        // Every cut inside the section, and every flipped byte of it, is refused or decodes to other
        // checked contents: never a crash, never the same history.
        let sectionStart = IndexCodec.encodeV2(image.entries, vaultID: image.vaultID, generation: image.generation, stateKey: stateKey).count
        // (A cut followed by zero padding can read as a shorter, well-formed section: the index's
        // AEAD is what stops a cut in a real file; here the codec must only never crash nor return
        // the same history.)
        // A cut of trailing bytes that are zero (a random tag may end in 0x00) pads back to the very
        // same bytes: that is no cut at all, so it is skipped rather than expected to differ.
        for cut in sectionStart..<unpadded.count where padded(Array(unpadded[..<cut])) != padded(unpadded) {
            if let other = try? IndexCodec.decodeV2(padded(Array(unpadded[..<cut])), vaultID: image.vaultID, valuesRegion: region(values),
                                                    regionOverhead: 32, hasHistory: true, path: nil) {
                #expect(other.history != history)
            }
        }
        for position in sectionStart..<unpadded.count {
            var flipped = unpadded
            flipped[position] ^= 0x41
            if let other = try? IndexCodec.decodeV2(padded(flipped), vaultID: image.vaultID, valuesRegion: region(values),
                                                    regionOverhead: 32, hasHistory: true, path: nil) {
                #expect(other.history != history)
            }
        }
    }

    @Test func theIndependentPythonReaderReadsTheHistorySection() throws {
        guard GoldenVaultTests.pythonCryptographyAvailable() else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { Issue.record("python3 with 'cryptography' is required in CI") }
            return
        }
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try Self.store(temp)
        try store.update(as: .add) { try $0.put(NewEntry(name: "api", secret: secret("one"), label: "L")) }
        try store.update(as: .import) { try $0.put(NewEntry(name: "api", secret: secret("two")), replace: true) }
        try store.remove(named: "api")
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("scripts/decrypt-vault.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, store.vaultPath, "--key-file", try Fixtures.privateCopy("keys/alice.key", into: temp)]
        let outputPipe = Pipe(), errorPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        try process.run()
        let output = outputPipe.fileHandleForReading.readDataToEndOfFile()
        let errors = String(decoding: errorPipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the reader failed: \(errors)")
        let object = try #require(try JSONSerialization.jsonObject(with: output) as? [String: Any])
        let history = try #require(object["history"] as? [String: Any])
        #expect(history["limit"] as? Int == 10)
        let record = try #require((history["records"] as? [[String: Any]])?.first)
        #expect(record["name"] as? String == "api" && record["lastVersion"] as? Int == 2)
        let versions = try #require(record["versions"] as? [[String: Any]])
        #expect(versions.map { $0["secretBase64"] as? String } == ["b25l", "dHdv"])
        #expect(versions.map { $0["writer"] as? String } == ["add", "import"])
        #expect(versions.first?["label"] as? String == "L")
    }

    @Test func aVersion2FileKeepsNoHistoryAndSaysSo() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let directory = temp.child("v2")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o700])
        _ = try Fixtures.privateCopy("golden/v2-keyfile.vault", into: temp, as: "v2/secrets.vault")
        let store = try SecretStore.open(in: directory, key: try Fixtures.keyFile("alice.key", in: temp), options: .testing())
        try store.put(NewEntry(name: "github", secret: secret("new")), replace: true)
        #expect(try store.formatVersion() == 2)
        let error = expectVaultError(.invalidInput) { try store.history(named: "github") }
        #expect(error?.topic == .historyNeedsNewerFormat)
        expectVaultError(.invalidInput) { try store.setHistoryLimit(3) }
        // After the explicit upgrade, history starts.
        try store.upgradeFormat()
        try store.put(NewEntry(name: "github", secret: secret("newer")), replace: true)
        #expect(try store.history(named: "github").versions.count == 2)
    }
}
