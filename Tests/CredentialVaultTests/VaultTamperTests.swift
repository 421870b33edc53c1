import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

/// Hostile edits of a vault file: every one is refused with its own error, nothing is
/// returned, and the file on disk is left as it was. Each test runs against format v2 (a
/// vault written now) and format v1 (the committed golden files, which this build only reads).
@Suite(.blockingWork) struct VaultTamperTests {
    /// A small vault and the bytes of its file.
    struct Sample {
        let temp: TemporaryDirectory
        let key: VaultKey
        let bytes: [UInt8]
        let layout: HeaderLayout
    }

    /// v3: a fresh vault with two entries of equal length. v1 and v2: `golden/vN-keyfile.vault`
    /// (`vN-passphrase-logn10.vault` for a passphrase).
    static func makeSample(version: UInt8 = 3, passphrase: Bool = false) throws -> Sample {
        let temp = try TemporaryDirectory("vault-tamper")
        let key = passphrase ? try Fixtures.passphrase() : try Fixtures.keyFile("alice.key", in: temp)
        if version < 3 {
            let name = passphrase ? "golden/v\(version)-passphrase-logn10.vault" : "golden/v\(version)-keyfile.vault"
            return Sample(temp: temp, key: key, bytes: try Array(Fixtures.data(name)), layout: version == 1 ? .v1 : .v2)
        }
        let store = try SecretStore.create(in: temp.child("original"), key: key, options: .testing())
        try store.put(NewEntry(name: "access", secret: secret("AAAAAAAAAAAAAAAA"), kind: .accessToken))
        try store.put(NewEntry(name: "refresh", secret: secret("RRRRRRRRRRRRRRRR"), kind: .refreshToken))
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        #expect(bytes[8] == 3, "this build makes new vaults as format v3")
        return Sample(temp: temp, key: key, bytes: bytes, layout: .v3)
    }

    /// Writes `bytes` as a vault in a fresh directory and tries to use it fully.
    /// Returns the error, and checks the file was not changed by the attempt.
    static func attempt(_ bytes: [UInt8], sample: Sample, name: String) throws -> VaultError? {
        let directory = sample.temp.child(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = directory + "/" + SecretStore.FileNames.vault
        FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        do {
            let store = try SecretStore.open(in: directory, key: sample.key, options: .testing())
            let report = try store.verify()   // opens every value
            if let failure = report.failures.first { return failure.error }
            return nil
        } catch let error as VaultError {
            let after = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(after == bytes, "a failed open changed the file")
            return error
        }
    }

    static func fixChecksum(_ bytes: inout [UInt8], _ layout: HeaderLayout) throws {
        let checksum = try SHA256.hash(Array(bytes[0..<layout.checksummedEnd]))
        bytes.replaceSubrange(layout.checksummedEnd..<layout.headerByteCount, with: checksum[0..<8])
    }

    static func expected(forFlippedByteAt offset: Int, _ layout: HeaderLayout) -> Set<VaultError.Code> {
        switch offset {
        // Another major this build reads (3 ⇄ 2) fails at the checksum; an unknown one (1 → 0) before it.
        case 8: HeaderLayout.forMajor(layout.majorVersion ^ 0x01) == nil ? [.unsupportedVersion] : [.corrupt]
        case 0..<layout.headerByteCount: [.corrupt]
        default: [.tampered]
        }
    }

    static let versions: [UInt8] = [3, 2, 1]

    @Test(arguments: versions)
    func openRejectsEveryFlippedByte(version: UInt8) throws {
        let sample = try Self.makeSample(version: version)
        defer { sample.temp.cleanUp() }
        var counts: [VaultError.Code: Int] = [:]
        for offset in sample.bytes.indices {
            var bytes = sample.bytes
            bytes[offset] ^= 0x01
            let error = try Self.attempt(bytes, sample: sample, name: "flip")
            let code = try #require(error?.code, "flipping byte \(offset) went unnoticed")
            #expect(Self.expected(forFlippedByteAt: offset, sample.layout).contains(code), "v\(version) byte \(offset): \(code)")
            counts[code, default: 0] += 1
        }
        print("tamper suite v\(version): flipped each of \(sample.bytes.count) bytes: \(counts.map { "\($0.key)=\($0.value)" }.sorted())")
        #expect(counts.values.reduce(0, +) == sample.bytes.count)
    }

    @Test(arguments: versions)
    func openRejectsHeaderEditsEvenWithARecomputedChecksum(version: UInt8) throws {
        let sample = try Self.makeSample(version: version)
        defer { sample.temp.cleanUp() }
        var counts: [VaultError.Code: Int] = [:]
        let lengths = sample.layout.lengthsOffset..<(sample.layout.lengthsOffset + 12)
        for offset in 8..<sample.layout.checksummedEnd {
            var bytes = sample.bytes
            bytes[offset] ^= 0x01
            try Self.fixChecksum(&bytes, sample.layout)
            let error = try Self.attempt(bytes, sample: sample, name: "hdr")
            let code = try #require(error?.code, "editing header byte \(offset) went unnoticed")
            switch offset {
            // 3 ⇄ 2 with a recomputed checksum: the major version is in the wrapped key's AAD.
            case 8 where HeaderLayout.forMajor(sample.layout.majorVersion ^ 0x01) != nil:
                #expect(code == .wrongKey, "byte \(offset): \(code)")
            // Bit 0 of the flags (byte 11) is a known flag in version 3 (history, header flag bit 0):
            // setting it on a file without the section is caught by the key's AAD, as other header bytes are.
            case 11 where sample.layout.majorVersion >= 3: #expect(code == .wrongKey, "byte \(offset): \(code)")
            case 8, 10..<12: #expect(code == .unsupportedVersion, "byte \(offset)")
            case 28..<38: #expect([.corrupt, .wrongKey, .kdfOutsidePolicy, .suspiciousKDFParameters].contains(code), "byte \(offset): \(code)")
            case 9, 12..<130: #expect(code == .wrongKey, "byte \(offset): \(code)")
            case lengths: #expect(code == .corrupt, "byte \(offset): \(code)")
            default: #expect(code == .tampered, "byte \(offset): \(code)")
            }
            counts[code, default: 0] += 1
        }
        print("tamper suite v\(version): edited \(sample.layout.checksummedEnd - 8) header bytes with recomputed checksum: \(counts.map { "\($0.key)=\($0.value)" }.sorted())")
    }

    @Test(arguments: versions)
    func openRejectsEveryTruncation(version: UInt8) throws {
        let sample = try Self.makeSample(version: version)
        defer { sample.temp.cleanUp() }
        for length in 0..<sample.bytes.count {
            let error = try Self.attempt(Array(sample.bytes[0..<length]), sample: sample, name: "trunc")
            #expect(error?.code == .corrupt, "truncated to \(length): \(String(describing: error))")
        }
        print("tamper suite: \(sample.bytes.count) truncations refused")
    }

    @Test(arguments: versions)
    func openRejectsAppendedBytes(version: UInt8) throws {
        let sample = try Self.makeSample(version: version)
        defer { sample.temp.cleanUp() }
        for extra in [[UInt8](repeating: 0, count: 1), [0x41], [UInt8](repeating: 0, count: 1024)] {
            let error = try Self.attempt(sample.bytes + extra, sample: sample, name: "append")
            #expect(error?.code == .corrupt)
        }
    }

    @Test(arguments: [3, 2] as [UInt8])
    func swappedValuesAreDetected(version: UInt8) throws {
        let sample = try Self.makeSample(version: version)
        defer { sample.temp.cleanUp() }
        // The values open the (padded) values region, in index order (v3: after the layer's salt,
        // under its key stream, so swapped bytes come out garbled; each value's own seal fails).
        var bytes = sample.bytes
        let start = try VaultFileHeader.parse(bytes, path: nil).valuesStart + (version == 3 ? VaultFileLayout.valuesLayerOverhead : 0)
        let first = Array(bytes[start..<(start + 16)])
        let second = Array(bytes[(start + 16)..<(start + 32)])
        bytes.replaceSubrange(start..<(start + 16), with: second)
        bytes.replaceSubrange((start + 16)..<(start + 32), with: first)
        let error = try Self.attempt(bytes, sample: sample, name: "swap")
        #expect(error?.code == .tampered)
        #expect(error?.message.contains("value of entry") == true, "\(String(describing: error))")
    }

    @Test func spliceOfTwoVaultsIsDetected() throws {
        let sample = try Self.makeSample()
        defer { sample.temp.cleanUp() }
        // A second vault, same key, same shape.
        let other = try SecretStore.create(in: sample.temp.child("other"), key: sample.key, options: .testing())
        try other.put(NewEntry(name: "access", secret: secret("BBBBBBBBBBBBBBBB")))
        try other.put(NewEntry(name: "refresh", secret: secret("CCCCCCCCCCCCCCCC")))
        let otherBytes = try Array(Data(contentsOf: URL(fileURLWithPath: other.vaultPath)))
        try #require(otherBytes.count == sample.bytes.count)

        let headerCount = sample.layout.headerByteCount
        let headerFromA = Array(sample.bytes[0..<headerCount]) + Array(otherBytes[headerCount...])
        #expect(try Self.attempt(headerFromA, sample: sample, name: "splice1")?.code == .tampered)
        let start = try VaultFileHeader.parse(sample.bytes, path: nil).valuesStart
        let valuesFromB = Array(sample.bytes[0..<start]) + Array(otherBytes[start...])
        #expect(try Self.attempt(valuesFromB, sample: sample, name: "splice2")?.code == .tampered)
    }

    @Test(arguments: versions)
    func kdfParametersOutsidePolicyAreRefusedBeforeScrypt(version: UInt8) throws {
        let sample = try Self.makeSample(version: version, passphrase: true)
        defer { sample.temp.cleanUp() }
        let cases: [(String, (inout [UInt8]) -> Void)] = [
            ("logN lowered to 9", { $0[29] = 9 }),
            ("logN 40", { $0[29] = 40 }),
            ("logN 0", { $0[29] = 0 }),
            ("r = 0", { $0.replaceSubrange(30..<34, with: [0, 0, 0, 0]) }),
            ("r = 2^32-1", { $0.replaceSubrange(30..<34, with: [0xFF, 0xFF, 0xFF, 0xFF]) }),
            ("p = 2^30", { $0.replaceSubrange(34..<38, with: [0x40, 0, 0, 0]) }),
        ]
        for (label, edit) in cases {
            var bytes = sample.bytes
            edit(&bytes)
            try Self.fixChecksum(&bytes, sample.layout)
            var error: VaultError?
            // CPU time of this thread (a loaded machine does not inflate it): scrypt would use seconds.
            let used = try ThreadCPUTime.measure { error = try Self.attempt(bytes, sample: sample, name: "kdf") }
            #expect(error?.code == .kdfOutsidePolicy, "\(label): \(String(describing: error))")
            #expect(error?.message.contains("KDF parameters outside policy") == true)
            #expect(used < .milliseconds(500), "\(label) used \(used) of CPU: scrypt ran")
        }
    }

    @Test(arguments: versions)
    func absurdLengthsAreRefused(version: UInt8) throws {
        let sample = try Self.makeSample(version: version)
        defer { sample.temp.cleanUp() }
        let index = sample.layout.lengthsOffset, values = index + 4
        var cases: [(Range<Int>, [UInt8])] = [
            (index..<(index + 4), [0xFF, 0xFF, 0xFF, 0xFF]),
            (index..<(index + 4), [0, 0, 0, 0]),
            (values..<(values + 8), [0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
            (values..<(values + 8), [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
        ]
        if version == 2 {
            // Moving 1,023 bytes from the values region to the index region keeps the file size
            // but breaks the padding rule: refused before any key work.
            let header = try VaultFileHeader.parse(sample.bytes, path: nil)
            try #require(header.valuesLength >= 1024)
            var misaligned = ByteWriter(capacity: 12)
            misaligned.append(header.indexCiphertextLength + 1023)
            misaligned.append(header.valuesLength - 1023)
            cases.append((index..<(index + 12), misaligned.bytes))
        }
        for (range, value) in cases {
            var bytes = sample.bytes
            bytes.replaceSubrange(range, with: value)
            try Self.fixChecksum(&bytes, sample.layout)
            #expect(try Self.attempt(bytes, sample: sample, name: "len")?.code == .corrupt)
        }
    }

    @Test(arguments: versions)
    func unknownVersionAndFlagsAreRefused(version: UInt8) throws {
        let sample = try Self.makeSample(version: version)
        defer { sample.temp.cleanUp() }
        var version4 = sample.bytes
        version4[8] = 4
        let error = try Self.attempt(version4, sample: sample, name: "v4")
        #expect(error?.code == .unsupportedVersion)
        #expect(error?.message.contains("4.0") == true)
        var flags = sample.bytes
        // Bit 7: unknown in every version (bits 0-2 are history, attributes and newer kinds in version 3).
        flags[11] = 0x80
        try Self.fixChecksum(&flags, sample.layout)
        #expect(try Self.attempt(flags, sample: sample, name: "flags")?.code == .unsupportedVersion)
        #expect(try Self.attempt(Array("not a vault at all".utf8), sample: sample, name: "text")?.code == .corrupt)
        #expect(try Self.attempt([], sample: sample, name: "empty")?.code == .corrupt)
    }

    @Test func restoringAnOlderCopyIsDetectedAsRollback() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let store = try SecretStore.create(in: temp.child("v"), key: key, options: .testing())
        try store.put(NewEntry(name: "old", secret: secret("1")))
        let oldCopy = try Data(contentsOf: URL(fileURLWithPath: store.vaultPath))
        try store.put(NewEntry(name: "new", secret: secret("2")))
        let remembered = store.generation
        try oldCopy.write(to: URL(fileURLWithPath: store.vaultPath))
        chmod(store.vaultPath, 0o600)

        let error = expectVaultError(.rollbackDetected) { try store.list() }
        #expect(error?.message.contains("older") == true)
        var options = SecretStore.Options.testing()
        options.minimumGeneration = remembered
        expectVaultError(.rollbackDetected) { try SecretStore.open(in: temp.child("v"), key: key, options: options) }
        // With the rollback memory off (`.testing()`) and no remembered generation the older copy opens;
        // RollbackMemoryTests cover the memory across processes (docs/SECURITY.md, "Rollback").
        #expect(try SecretStore.open(in: temp.child("v"), key: key, options: .testing()).list().map(\.name) == ["old"])
    }
}
