import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// `changeKey` (`vault passwd`) makes a new data key: the old key, even with an old copy of
/// the file (which holds the old data key), can neither read nor forge what is stored after.
@Suite struct ChangeKeyRekeyTests {
    struct Scenario {
        let temp: TemporaryDirectory
        let directory: String
        let newKey: VaultKey
        /// What the attacker holds: the old data keys, from the old key file and an old copy.
        let oldImage: VaultImage
        let oldKeys: DataKeys
        let oldKEK: SymmetricKey
        /// The file after the key change and one more write.
        let newFile: [UInt8]
    }

    static func makeScenario() throws -> Scenario {
        let temp = try TemporaryDirectory()
        let alice = try Fixtures.keyFile("alice.key", in: temp)
        let bob = try Fixtures.keyFile("bob.key", in: temp)
        let directory = temp.child("v")
        let store = try SecretStore.create(in: directory, key: alice, options: .testing())
        try store.put(NewEntry(name: "before", secret: secret("stored before passwd")))
        let oldCopy = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        try store.changeKey(to: bob)
        try store.put(NewEntry(name: "after", secret: secret("stored after passwd!")))
        let newFile = try Array(Data(contentsOf: URL(fileURLWithPath: store.vaultPath)))
        let (oldImage, oldKeys, oldKEK) = try VaultFileCodec.decode(
            oldCopy, path: nil,
            kekProvider: { slot in
                try KeyHierarchy.deriveKEK(key: alice, kind: slot.kind, parameters: slot.scrypt, salt: slot.salt, policy: .testing, path: nil)
            },
            dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
        return Scenario(temp: temp, directory: directory, newKey: bob, oldImage: oldImage, oldKeys: oldKeys, oldKEK: oldKEK, newFile: newFile)
    }

    /// The honest decode of the new file (what an attacker who saw everything but the keys would know).
    static func newImage(_ scenario: Scenario) throws -> (VaultImage, DataKeys) {
        let (image, keys, _) = try VaultFileCodec.decode(
            scenario.newFile, path: nil,
            kekProvider: { slot in
                try KeyHierarchy.deriveKEK(key: scenario.newKey, kind: slot.kind, parameters: slot.scrypt, salt: slot.salt,
                                           policy: .testing, path: nil)
            },
            dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
        return (image, keys)
    }

    static func install(_ bytes: [UInt8], in scenario: Scenario) throws {
        try Data(bytes).write(to: URL(fileURLWithPath: scenario.directory + "/" + SecretStore.FileNames.vault))
        chmod(scenario.directory + "/" + SecretStore.FileNames.vault, 0o600)
    }

    @Test func theOldKeyAndAnOldCopyCannotDecryptWhatIsStoredAfterTheChange() throws {
        let scenario = try Self.makeScenario()
        defer { scenario.temp.cleanUp() }
        let (image, newKeys) = try Self.newImage(scenario)
        #expect(newKeys.dek != scenario.oldKeys.dek, "the key change made a new data key")
        // The index cannot be opened with the old data key...
        let header = try VaultFileHeader.parse(scenario.newFile, path: nil)
        let indexBox = try AES256GCM.SealedBox(combined: scenario.newFile[header.layout.headerByteCount..<header.valuesStart])
        #expect(throws: CryptoError.self) {
            try AES256GCM.open(indexBox, using: scenario.oldKeys.index(header.layout),
                               authenticating: Array(scenario.newFile[0..<header.layout.headerByteCount]))
        }
        // ...and even knowing each value's nonce and tag, neither value opens under the old value key.
        for name in ["after", "before"] {
            let entry = try #require(image.entries.first { $0.name == name })
            expectVaultError(.tampered) { try entry.open(vaultID: image.vaultID, key: scenario.oldKeys.value, path: nil) }
            #expect(try entry.open(vaultID: image.vaultID, key: newKeys.value, path: nil).count > 0)
        }
    }

    @Test func anEntryForgedWithTheOldDataKeyIsRefusedUnderTheNewKey() throws {
        let scenario = try Self.makeScenario()
        defer { scenario.temp.cleanUp() }
        let (image, newKeys) = try Self.newImage(scenario)
        // The attacker seals a value of the same length under the old value key for "after".
        let forgedSecret = secret("forged by old key!!!")
        let sealed = try SealedEntry.seal(forgedSecret, owner: "", name: "after", vaultID: image.vaultID, key: scenario.oldKeys.value)
        var forged = image
        let position = try #require(forged.entries.firstIndex { $0.name == "after" })
        forged.entries[position].nonce = sealed.nonce
        forged.entries[position].ciphertext = sealed.ciphertext
        forged.entries[position].tag = sealed.tag
        forged.generation += 1

        // 1. A whole file under the old data key (wrapped with the old KEK): the new key does not open it.
        try Self.install(try VaultFileCodec.encode(forged, keys: scenario.oldKeys, kek: scenario.oldKEK), in: scenario)
        expectVaultError(.wrongKey) { try SecretStore.open(in: scenario.directory, key: scenario.newKey, options: .testing()) }

        // 2. The new file's header (the new wrapped key) with an index sealed under the old data key.
        let header = try VaultFileHeader.parse(scenario.newFile, path: nil)
        let headerBytes = Array(scenario.newFile[0..<header.layout.headerByteCount])
        var plain = IndexCodec.encodeV2(forged.entries, vaultID: image.vaultID, generation: forged.generation,
                                        stateKey: try #require(image.stateKey))
        plain += [UInt8](repeating: 0, count: IndexCodec.paddedV2Length(unpadded: plain.count) - plain.count)
        let box = try AES256GCM.seal(plain, using: scenario.oldKeys.index(header.layout), authenticating: headerBytes)
        var values = forged.entries.flatMap { Array($0.ciphertext) }
        values += [UInt8](repeating: 0, count: HeaderLayout.v3.valuesRegionByteCount(valuesLength: values.count)
                          - VaultFileLayout.valuesLayerOverhead - values.count)
        let spliced = headerBytes + box.combined + (try ValuesLayer.seal(values, dek: scenario.oldKeys.dek, vaultID: image.vaultID))
        #expect(spliced.count == scenario.newFile.count)
        try Self.install(spliced, in: scenario)
        let error = expectVaultError(.tampered) { try SecretStore.open(in: scenario.directory, key: scenario.newKey, options: .testing()) }
        #expect(error?.message.contains("entry index") == true)

        // 3. The genuine new file with only the value bytes of "after" replaced: `get` and `verify` refuse it.
        // (Format v3: under the values layer, which the test takes off and puts back with the new data
        // key, so that only the value's own seal can refuse it.)
        #expect(header.layout.majorVersion == 3)
        var plainValues = try ValuesLayer.open(scenario.newFile[header.valuesStart...], dek: newKeys.dek, vaultID: image.vaultID, path: nil)
        let start = Int(image.entries[0..<position].reduce(0) { $0 + $1.ciphertext.count })
        plainValues.replaceSubrange(start..<(start + sealed.ciphertext.count), with: sealed.ciphertext)
        let valueOnly = Array(scenario.newFile[..<header.valuesStart]) + (try ValuesLayer.seal(plainValues, dek: newKeys.dek, vaultID: image.vaultID))
        try Self.install(valueOnly, in: scenario)
        let store = try SecretStore.open(in: scenario.directory, key: scenario.newKey, options: .testing())
        expectVaultError(.tampered) { try store.secret(named: "after") }
        let report = try store.verify()
        #expect(report.failures.map(\.name) == ["after"])
    }
}
