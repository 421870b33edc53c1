import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// Format v3 (issue 25, point 8): the values region, padding included, is sealed anew on every
/// write, so a file does not show where the ciphertext ends, and two copies of a vault do not
/// share the bytes of a value that did not change. Each test also runs on v2, where the same
/// measure shows the leak: the measures can fail.
@Suite struct FormatV3Tests {
    /// The values region of `file` (after the header and the index region).
    static func valuesRegion(_ file: [UInt8]) throws -> ArraySlice<UInt8> {
        file[try VaultFileHeader.parse(file, path: nil).valuesStart...]
    }

    /// Pearson's chi-square of the byte frequencies of `bytes` against the uniform distribution
    /// (255 degrees of freedom: about 255 for random bytes, above 330 with probability 0.001).
    static func chiSquare(_ bytes: [UInt8]) -> Double {
        var counts = [Int](repeating: 0, count: 256)
        for byte in bytes { counts[Int(byte)] += 1 }
        let expected = Double(bytes.count) / 256
        return counts.reduce(0) { $0 + (Double($1) - expected) * (Double($1) - expected) / expected }
    }

    /// Every 16-byte window of `bytes`.
    static func windows(_ bytes: ArraySlice<UInt8>) -> Set<[UInt8]> {
        guard bytes.count >= 16 else { return [] }
        return Set((bytes.startIndex...(bytes.endIndex - 16)).map { Array(bytes[$0..<($0 + 16)]) })
    }

    @Test(arguments: [3, 2] as [UInt8])
    func aOneEntryFileDoesNotShowTheSecretsLength(version: UInt8) throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        var sizes = Set<Int>()
        var regions: [UInt8] = []
        var zeroTails: [Int] = []
        for length in stride(from: 1, through: 941, by: 20) {
            let file = try FormatV2Tests.vaultFile(secretLength: length, version: version, in: temp)
            #expect(file[8] == version)
            sizes.insert(file.count)
            let region = try Self.valuesRegion(file)
            regions.append(contentsOf: region)
            // Where the ciphertext ends is where a run of zeros to the end of the file begins.
            zeroTails.append(region.reversed().prefix { $0 == 0 }.count)
        }
        let chi = Self.chiSquare(regions)
        print("format v\(version): 48 one-entry vaults with secrets of 1…941 bytes: file sizes \(sizes.sorted()), "
              + "values-region bytes \(regions.count), chi-square \(Int(chi)) (255 d.o.f.), longest zero tail \(zeroTails.max() ?? 0)")
        #expect(sizes.count == 1, "one size for every secret length up to the quantum")
        if version == 3 {
            #expect(chi < 400, "the values region is not uniform: chi-square \(chi)")
            #expect((zeroTails.max() ?? 0) < 4, "a zero run marks the end of the ciphertext")
        } else {
            #expect(chi > 10_000, "v2 pads with zeros in the clear")
            #expect(zeroTails == zeroTails.sorted(by: >), "v2: the zero tail shrinks as the secret grows")
        }
    }

    @Test(arguments: [3, 2] as [UInt8])
    func twoCopiesShareNoBytesOfAnUnchangedValue(version: UInt8) throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try FormatV2Tests.store(version: version, name: "copies", in: temp)
        try store.put(NewEntry(name: "kept", secret: secret(String(repeating: "k", count: 200))))
        let backup = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        try store.put(NewEntry(name: "added", secret: secret("seventeen letters")))
        let today = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        #expect(backup.count == today.count)
        let shared = Self.windows(try Self.valuesRegion(backup)).intersection(Self.windows(try Self.valuesRegion(today)))
            .filter { $0.contains { $0 != 0 } }
        print("format v\(version): a backup and the file after one more entry share \(shared.count) 16-byte windows of non-zero values bytes")
        if version == 3 {
            #expect(shared.isEmpty, "an unchanged value kept its bytes across writes")
        } else {
            // v2 keeps the unchanged value's ciphertext, so the shift shows the added value's exact length.
            #expect(shared.count > 100)
        }
    }

    @Test func aWriteKeepsAVersion2FileAtVersion2AndUpgradeFormatMovesItToVersion3() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let store = try FormatV2Tests.store(version: 2, name: "upgrade", in: temp)
        try store.put(NewEntry(name: "api", secret: secret("value of api")))
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))[8] == 2, "a write keeps v2")
        #expect(try store.formatVersion() == 2)
        let generation = store.generation

        let upgrade = try store.upgradeFormat()
        #expect(upgrade == FormatUpgrade(previousVersion: 2, version: 3) && upgrade.changed)
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        #expect(bytes[8] == 3)
        #expect(try store.formatVersion() == 3)
        let reopened = try SecretStore.open(in: store.directory, key: Fixtures.keyFile("bob.key", in: temp), options: .testing())
        #expect(reopened.generation == generation + 1)
        #expect(try reopened.secret(named: "api") == secret("value of api"))
        #expect(try reopened.verify().isIntact)

        let again = try reopened.upgradeFormat()
        #expect(!again.changed && again.version == 3)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath))) == bytes, "nothing written when current")
        try reopened.put(NewEntry(name: "more", secret: secret("x")))
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))[8] == 3, "a write keeps v3")
    }

    @Test func aValuesRegionTooShortOrMissingIsMalformed() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let file = try FormatV2Tests.vaultFile(secretLength: 5, version: 3, in: temp)
        let header = try VaultFileHeader.parse(file, path: nil)
        // The header says "no values region": v2 allows it (an empty vault), v3 never writes it.
        var edited = VaultFileHeader(layout: .v3, minorVersion: 0, vaultID: header.vaultID, slot: header.slot, generation: 0,
                                     indexCiphertextLength: header.indexCiphertextLength, valuesLength: 0, mac: header.mac)
        let truncated = try edited.encoded() + Array(file[HeaderLayout.v3.headerByteCount..<header.valuesStart])
        let error = expectVaultError(.corrupt) { try VaultFileHeader.parse(truncated, path: nil) }
        #expect(error?.message.contains("values region is missing") == true)
        edited.valuesLength = 1024
        #expect(try VaultFileHeader.parse(try edited.encoded() + Array(file[HeaderLayout.v3.headerByteCount...]), path: nil).valuesLength == 1024)
        let short = ValuesLayerProbe.open(Array(repeating: 0, count: 31))
        #expect(short?.code == .corrupt)
    }
}

/// Calls `ValuesLayer.open` on a region of the given bytes with a throwaway key.
enum ValuesLayerProbe {
    static func open(_ region: [UInt8]) -> VaultError? {
        do {
            _ = try ValuesLayer.open(region[...], dek: SymmetricKey.generate(), vaultID: [UInt8](repeating: 1, count: 16), path: nil)
            return nil
        } catch let error as VaultError {
            return error
        } catch {
            return nil
        }
    }
}
