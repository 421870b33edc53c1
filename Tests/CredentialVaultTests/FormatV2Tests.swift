import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// Formats v2 and v3 hide lengths and the generation from the header, and version 1 files move
/// to v2 on their next write. (What v3 adds, the values layer: `FormatV3Tests`.)
@Suite struct FormatV2Tests {
    /// Header byte ranges that are random on every write or per vault (vault id, salt, wrapped
    /// key, MAC, checksum); everything else in the v2 header must not depend on the contents.
    static let randomHeaderRanges: [Range<Int>] = [12..<28, 38..<70, 70..<130, 142..<174, 174..<182]

    static func nonRandomHeaderBytes(_ file: [UInt8]) -> [UInt8] {
        file.prefix(HeaderLayout.v2.headerByteCount).enumerated()
            .filter { offset, _ in !randomHeaderRanges.contains { $0.contains(offset) } }.map(\.element)
    }

    /// A one-entry vault of format `version` holding `secretLength` bytes, written `writes` times;
    /// returns the file. Version 3 is a new vault; version 2 starts from the golden empty v2 file
    /// (writes keep a v2 file at v2).
    static func vaultFile(secretLength: Int, writes: Int = 1, version: UInt8 = 3, in temp: TemporaryDirectory) throws -> [UInt8] {
        let store = try store(version: version, name: "v\(version)-\(secretLength)-\(writes)", in: temp)
        for _ in 0..<writes {
            try store.put(NewEntry(name: "password", secret: SecureBytes(copying: [UInt8](repeating: 0x61, count: secretLength))),
                          replace: true)
        }
        return try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
    }

    /// An empty store of format `version` (2 or 3) in `temp/name`.
    static func store(version: UInt8, name: String, in temp: TemporaryDirectory) throws -> SecretStore {
        guard version == 2 else {
            return try SecretStore.create(in: temp.child(name), key: Fixtures.keyFile("alice.key", in: temp), options: .testing())
        }
        let directory = temp.child(name)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        _ = try Fixtures.privateCopy("golden/v2-empty.vault", into: temp, as: "\(name)/\(SecretStore.FileNames.vault)")
        return try SecretStore.open(in: directory, key: Fixtures.keyFile("bob.key", in: temp), options: .testing())
    }

    @Test(arguments: [2, 3] as [UInt8])
    func headersOfVaultsWithDifferentSecretLengthsDifferOnlyInRandomFields(version: UInt8) throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let five = try Self.vaultFile(secretLength: 5, version: version, in: temp)
        let six = try Self.vaultFile(secretLength: 6, version: version, in: temp)
        #expect(five[8] == version && six[8] == version)
        #expect(five.count == six.count)
        #expect(Self.nonRandomHeaderBytes(five) == Self.nonRandomHeaderBytes(six))
        // The comparison can fail: a secret past the padding quantum changes the padded values size.
        let large = try Self.vaultFile(secretLength: 1500, version: version, in: temp)
        #expect(Self.nonRandomHeaderBytes(large) != Self.nonRandomHeaderBytes(five))
        #expect(five.count % VaultFileLayout.paddingQuantum == 0 && large.count % VaultFileLayout.paddingQuantum == 0)
    }

    @Test(arguments: [2, 3] as [UInt8])
    func theGenerationIsNotInTheClear(version: UInt8) throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let once = try Self.vaultFile(secretLength: 8, writes: 1, version: version, in: temp)
        let often = try Self.vaultFile(secretLength: 8, writes: 7, version: version, in: temp)
        #expect(once.count == often.count)
        #expect(Self.nonRandomHeaderBytes(once) == Self.nonRandomHeaderBytes(often))
    }

    @Test func aVersion1VaultIsRewrittenAsVersion2OnItsNextWrite() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let directory = temp.child("v")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = try Fixtures.privateCopy("golden/v1-keyfile.vault", into: temp, as: "v/\(SecretStore.FileNames.vault)")
        let key = try Fixtures.keyFile("alice.key", in: temp)
        let store = try SecretStore.open(in: directory, key: key, options: .testing())
        let before = try store.list()
        let generation = store.generation
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: path)))[8] == 1, "reading leaves a v1 file alone")

        try store.put(NewEntry(name: "added", secret: secret("new value")))
        let after = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(after[8] == 2)
        #expect(after.count % VaultFileLayout.paddingQuantum == 0)
        let reopened = try SecretStore.open(in: directory, key: key, options: .testing())
        #expect(reopened.generation == generation + 1)
        #expect(try reopened.list().count == before.count + 1)
        #expect(try reopened.secret(named: "github") == secret("gho_16C7e42F292c6912E7710c838347Ae178B4a"))
        #expect(try reopened.secret(named: "cart", owner: "guest:anon-1") == SecureBytes(copying: [0, 1, 2, 0, 255]))
        #expect(try reopened.verify().isIntact)
    }

    @Test func valuesRegionPaddingIsChecked() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let file = try Self.vaultFile(secretLength: 5, version: 2, in: temp)
        let header = try VaultFileHeader.parse(file, path: nil)
        // The last byte of the file is values padding: not encrypted, but its value is fixed (zero).
        var edited = file
        edited[edited.count - 1] = 0x01
        let directory = temp.child("edited")
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        FileManager.default.createFile(atPath: directory + "/" + SecretStore.FileNames.vault, contents: Data(edited),
                                       attributes: [.posixPermissions: 0o600])
        let key = try Fixtures.keyFile("bob.key", in: temp)
        #expect(header.valuesLength == 1024)
        let error = expectVaultError(.tampered) { try SecretStore.open(in: directory, key: key, options: .testing()) }
        #expect(error?.message.contains("values region") == true)
    }
}
