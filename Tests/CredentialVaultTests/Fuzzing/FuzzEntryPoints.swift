import Foundation
import VaultCrypto
@testable import CredentialVault

// Entry points for the libFuzzer harness (`Fuzz/`, run by `scripts/fuzz`) and for the
// test that replays its findings (`FuzzRegressionTests`). Test code, not product code:
// this file is compiled into the test target and, by `scripts/fuzz`, into the fuzzer
// with `Fuzz/*.swift`, both against a CredentialVault built for testing. Nothing here is
// in the library an app links or reachable from the `vault` command.
//
// Each entry point feeds one input to a parser and checks properties that must hold for
// ANY input: only the documented `VaultError` codes escape, accepted input survives a
// write-and-read-back unchanged, and error messages never quote a token. A broken
// property is thrown as a `FuzzFinding`; the harness turns it into a crash so libFuzzer
// saves the input. A crash inside the parser (a trap) is a finding by itself.

/// The parsers the fuzzers drive, one libFuzzer target each. The raw value names the
/// target in `scripts/fuzz` and its folder under `Fixtures/fuzz-regressions/`.
enum FuzzTarget: String, CaseIterable, Sendable {
    /// `VaultFileHeader.parse` and the whole `VaultFileCodec.decode` with the fixture key file.
    case vaultFile = "vault-file"
    /// `IndexCodec.decode` (v1) or `IndexCodec.decodeV2` on plaintext index bytes, bound to the golden file's vault id.
    case vaultIndex = "vault-index"
    /// `ByteReader`, driven by a small program of reads.
    case byteReader = "byte-reader"
    /// `JSONValue(parsing:)` and the profile reader (`ProfileStore.decode`, `Profile(json:)`).
    case profile
    /// `JWT.decode`, `JWT.expiry`, `TokenResponse.parse` and `TokenResponse.parseError`.
    case tokens
}

/// An input that broke a property the code promises for every input.
struct FuzzFinding: Error, CustomStringConvertible {
    /// What broke, for the crash report.
    let description: String

    init(_ description: String) { self.description = description }
}

/// What the target's main parser made of an input (for tests of the harness itself).
enum FuzzOutcome: Equatable, Sendable {
    /// The input was accepted.
    case accepted
    /// The input was refused with this code.
    case rejected(VaultError.Code)
}

/// The fixed inputs of the fuzzers: the key file and golden vaults that the test suite
/// also uses (`Tests/CredentialVaultTests/Fixtures`).
struct FuzzContext: Sendable {
    /// The key file every `vault-file` input is opened with (`keys/alice.key`).
    let keyMaterial: [UInt8]
    /// `golden/v1-keyfile.vault`, which that key opens.
    let template: [UInt8]
    let templateHeader: VaultFileHeader
    /// The template's contents re-encoded as format v2 under the same data key (made at start-up).
    let templateV2: [UInt8]
    /// The same as format v3 (the values layer under a fresh salt; made at start-up).
    let templateV3: [UInt8]
    /// The template's data key: modes 2 and 3 of `vault-file` wrap it into each input.
    let dek: SymmetricKey
    /// Every golden vault, as seeds.
    let goldenVaults: [[UInt8]]
    /// Every token-response fixture, as seeds.
    let tokenResponses: [[UInt8]]

    /// Reads the fixtures.
    /// - Parameter fixtures: the `Fixtures` folder of the CredentialVault tests.
    /// - Throws: when a fixture is missing or the template vault does not open with the key.
    init(fixtures: String) throws {
        func read(_ relativePath: String) throws -> [UInt8] {
            let url = URL(fileURLWithPath: fixtures).appendingPathComponent(relativePath)
            return Array(try Data(contentsOf: url))
        }
        func readAll(in folder: String, suffix: String) throws -> [[UInt8]] {
            let names = try FileManager.default.contentsOfDirectory(atPath: fixtures + "/" + folder)
            return try names.filter { $0.hasSuffix(suffix) }.sorted().map { try read(folder + "/" + $0) }
        }
        keyMaterial = try read("keys/alice.key")
        template = try read("golden/v1-keyfile.vault")
        templateHeader = try VaultFileHeader.parse(template, path: nil)
        let key = VaultKey.keyMaterial(SecureBytes(copying: keyMaterial))
        let (image, keys, kek) = try VaultFileCodec.decode(template, path: nil,
                                                             kekProvider: { try Self.deriveKEK(key: key, slot: $0) },
                                                             dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
        dek = keys.dek
        templateV2 = try VaultFileCodec.encode(image, keys: keys, kek: kek)
        var imageV3 = image
        imageV3.majorVersion = 3
        templateV3 = try VaultFileCodec.encode(imageV3, keys: keys, kek: kek)
        goldenVaults = try readAll(in: "golden", suffix: ".vault")
        tokenResponses = try readAll(in: "token-responses", suffix: ".json")
    }

    var key: VaultKey { .keyMaterial(SecureBytes(copying: keyMaterial)) }

    /// The KEK for `slot`; with a key file this is HKDF only, so hostile scrypt parameters cost nothing.
    static func deriveKEK(key: VaultKey, slot: KeySlot) throws -> SymmetricKey {
        try KeyHierarchy.deriveKEK(key: key, kind: slot.kind, parameters: slot.scrypt, salt: slot.salt,
                                   policy: .standard, path: nil)
    }
}

/// Runs one input through one target's parsers and checks its properties.
enum FuzzEntryPoints {
    /// Feeds `input` to `target`.
    /// - Returns: whether the target's main parser accepted it.
    /// - Throws: `FuzzFinding` when a property breaks; nothing else.
    @discardableResult
    static func run(_ target: FuzzTarget, _ input: [UInt8], context: FuzzContext) throws(FuzzFinding) -> FuzzOutcome {
        switch target {
        case .vaultFile: try vaultFile(input, context: context)
        case .vaultIndex: try vaultIndex(input, context: context)
        case .byteReader: try byteReader(input)
        case .profile: try profile(input)
        case .tokens: try tokens(input)
        }
    }

    /// Starting inputs for `target`, built from the fixtures (the fuzzer mutates from here).
    static func seeds(for target: FuzzTarget, context: FuzzContext) throws -> [[UInt8]] {
        switch target {
        case .vaultFile:
            var seeds: [[UInt8]] = []
            for golden in context.goldenVaults { seeds += [[0] + golden, [1] + golden] }
            for template in [context.template, context.templateV2, context.templateV3] {
                seeds.append([2] + template)
                seeds.append([3] + (try unsealed(template, context: context)))
            }
            return seeds
        case .vaultIndex:
            let (plain, values) = try plainIndex(of: context.template, context: context)
            let empty = IndexCodec.encode([], vaultID: context.templateHeader.vaultID, generation: context.templateHeader.generation)
            let (plainV2, valuesV2) = try plainIndex(of: context.templateV2, context: context)
            let (plainV3, valuesV3) = try plainIndex(of: context.templateV3, context: context)
            // The v3 index again with attributes on its first entry (flag bit 3), so the fuzzer reaches them.
            var contents = try IndexCodec.decodeV2(plainV3, vaultID: context.templateHeader.vaultID, valuesRegion: valuesV3[...],
                                                   regionOverhead: VaultFileLayout.valuesLayerOverhead, path: nil)
            contents.entries[0].attributes = ["xdg:schema": "org.git.Password", "server": "example.com", "empty": ""]
            var withAttributes = IndexCodec.encodeV2(contents.entries, vaultID: context.templateHeader.vaultID,
                                                     generation: contents.generation, stateKey: contents.stateKey ?? [])
            withAttributes += [UInt8](repeating: 0, count: IndexCodec.paddedV2Length(unpadded: withAttributes.count) - withAttributes.count)
            return [[UInt8(values.count >> 8), UInt8(values.count & 0xFF)] + plain + values, [0, 0] + empty,
                    [0x80 | UInt8(valuesV2.count >> 8), UInt8(valuesV2.count & 0xFF)] + plainV2 + valuesV2,
                    [0xC0 | UInt8(valuesV3.count >> 8), UInt8(valuesV3.count & 0xFF)] + plainV3 + valuesV3,
                    [0xC0 | UInt8(valuesV3.count >> 8), UInt8(valuesV3.count & 0xFF)] + withAttributes + valuesV3]
        case .byteReader:
            return [[5, 0, 1, 2, 3, 4] + Array(0..<40), [3, 5 | (3 << 3), 6, 7, 1, 2, 3, 4, 5, 6]]
        case .profile:
            let user = User(id: "user-1234", displayName: "Alice", email: "alice@example.com", signInMethod: "password",
                            onboardingComplete: true)
            var full = Profile(anonymousID: "anon-1", user: user, settings: ["theme": "dark", "volume": 0.5, "list": [1, true, nil]])
            full.pendingSignIn = PendingSignIn(journalID: "j-1", userID: "user-1234", anonymousID: "anon-1", user: user,
                                               startedAt: Date(timeIntervalSince1970: 1_767_225_600.123))
            full.extra = ["futureKey": ["nested": "kept"]]
            return try [full, Profile(), Profile(anonymousID: "anon-2")].map { try $0.jsonValue().serialized(prettyPrinted: true) }
                + [Array("[1, 2.5e3, -0, \"\\u00e9\\ud83d\\ude00\", {\"a\": null}]".utf8)]
        case .tokens:
            var seeds = context.tokenResponses
            for response in context.tokenResponses {
                guard case .object(let members)? = try? JSONParser.parse(response) else { continue }
                for name in ["access_token", "id_token"] {
                    if case .string(let token)? = members[name], token.contains(".") { seeds.append(Array(token.utf8)) }
                }
            }
            return seeds
        }
    }

    // MARK: - vault-file

    /// Codes `VaultFileCodec.decode` documents; anything else escaping is a finding.
    private static let vaultFileCodes: Set<VaultError.Code> = [.corrupt, .unsupportedVersion, .kdfOutsidePolicy, .suspiciousKDFParameters, .wrongKey, .tampered]

    /// The first byte picks how far the input gets past the integrity checks (the rest is a file):
    /// 0 as is; 1 header checksum recomputed; 2 data key re-wrapped under the fixture key and
    /// header MAC recomputed (so every header field is reachable); 3 as 2, but the bytes after
    /// the header are a PLAINTEXT index then the values, which are sealed with the key and the
    /// lengths set to match, so the decoder's index checks and the values are reachable too.
    static func vaultFile(_ input: [UInt8], context: FuzzContext) throws(FuzzFinding) -> FuzzOutcome {
        guard let mode = input.first else { return .rejected(.corrupt) }
        var file = Array(input.dropFirst())
        do {
            switch mode % 4 {
            case 0: break
            case 1: try fixChecksum(&file)
            case 2: try reauthenticate(&file, context: context)
            default: file = try sealed(file, context: context)
            }
        } catch {
            throw FuzzFinding("the harness could not prepare the input: \(error)")
        }

        let parsedHeader: VaultFileHeader?
        do {
            parsedHeader = try VaultFileHeader.parse(file, path: nil)
        } catch {
            try expect(error, in: [.corrupt, .unsupportedVersion], from: "VaultFileHeader.parse")
            parsedHeader = nil
        }
        if let parsedHeader {
            let encoded: [UInt8]
            do { encoded = try parsedHeader.encoded() } catch { throw FuzzFinding("a parsed header does not encode: \(error)") }
            guard encoded[...] == file[0..<parsedHeader.layout.headerByteCount] else {
                throw FuzzFinding("a parsed header encodes to different bytes")
            }
        }

        let key = context.key
        let decoded: (VaultImage, DataKeys, SymmetricKey)
        do {
            decoded = try VaultFileCodec.decode(file, path: nil, kekProvider: { try FuzzContext.deriveKEK(key: key, slot: $0) },
                                                dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
        } catch {
            return try expect(error, in: vaultFileCodes, from: "VaultFileCodec.decode")
        }
        guard parsedHeader != nil else { throw FuzzFinding("decode accepted a file whose header does not parse") }
        let (image, keys, kek) = decoded
        for entry in image.entries {
            do {
                _ = try entry.open(vaultID: image.vaultID, key: keys.value, path: nil)
            } catch {
                try expect(error, in: [.tampered], from: "SealedEntry.open")
            }
        }
        // What was accepted must survive a rewrite unchanged.
        do {
            let rewritten = try VaultFileCodec.encode(image, keys: keys, kek: kek)
            guard rewritten.count % VaultFileLayout.paddingQuantum == 0 else { throw FuzzFinding("a rewritten file is not padded") }
            let (again, _, _) = try VaultFileCodec.decode(rewritten, path: nil, kekProvider: { _ in kek },
                                                          dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
            guard again.entries == image.entries, again.vaultID == image.vaultID, again.generation == image.generation,
                  again.slot.kind == image.slot.kind, again.slot.scrypt == image.slot.scrypt, again.slot.salt == image.slot.salt
            else { throw FuzzFinding("an accepted vault changes when written and read back") }
        } catch let finding as FuzzFinding {
            throw finding
        } catch {
            throw FuzzFinding("an accepted vault cannot be written and read back: \(error)")
        }
        return .accepted
    }

    /// The header layout the file's version byte names (v1 for anything else: the harness only prepares bytes).
    private static func layout(of file: [UInt8]) -> HeaderLayout {
        file.count > 8 ? HeaderLayout.forMajor(file[8]) ?? .v1 : .v1
    }

    private static func fixChecksum(_ file: inout [UInt8]) throws {
        let layout = layout(of: file)
        guard file.count >= layout.headerByteCount else { return }
        let checksum = try SHA256.hash(Array(file[0..<layout.checksummedEnd]))
        file.replaceSubrange(layout.checksummedEnd..<layout.headerByteCount, with: checksum[0..<VaultFileLayout.checksumByteCount])
    }

    /// Wraps the template's data key under the fixture key with this header's AAD, then
    /// recomputes the header MAC and checksum.
    private static func reauthenticate(_ file: inout [UInt8], context: FuzzContext) throws {
        let layout = layout(of: file)
        guard file.count >= layout.headerByteCount else { return }
        let salt = Array(file[VaultFileLayout.wrapAADEnd - VaultFileLayout.saltByteCount..<VaultFileLayout.wrapAADEnd])
        let kek = try FuzzContext.deriveKEK(key: context.key, slot: KeySlot(kind: .keyMaterial, scrypt: .init(logN: 0, r: 0, p: 0),
                                                                            salt: salt, wrapNonce: [], wrappedDEK: [], wrapTag: []))
        let wrapped = try KeyHierarchy.wrap(dek: context.dek, kek: kek, aad: Array(file[0..<VaultFileLayout.wrapAADEnd]))
        file.replaceSubrange(VaultFileLayout.wrapStart..<VaultFileLayout.wrapEnd, with: wrapped.nonce + wrapped.ciphertext + wrapped.tag)
        let vaultID = Array(file[12..<12 + VaultFileLayout.vaultIDByteCount])
        let keys = try DataKeys(dek: context.dek, vaultID: vaultID)
        let mac = try HMACSHA256.authenticationCode(for: Array(file[0..<layout.macedEnd]), using: keys.headerMAC(layout))
        file.replaceSubrange(layout.macedEnd..<layout.checksummedEnd, with: mac)
        try fixChecksum(&file)
    }

    /// `header ‖ plaintext index ‖ values` (index length from the header, clamped) → a sealed file;
    /// for a v3 header the values (with their padding) also get the values layer.
    private static func sealed(_ unsealed: [UInt8], context: FuzzContext) throws -> [UInt8] {
        let layout = layout(of: unsealed)
        let headerCount = layout.headerByteCount
        guard unsealed.count >= headerCount else { return unsealed }
        var header = Array(unsealed[0..<headerCount])
        var reader = ByteReader(header, region: "header", offset: layout.lengthsOffset)
        let announced = Int(try reader.readUInt32())
        let indexCount = min(announced, unsealed.count - headerCount)
        let valuesCount = unsealed.count - headerCount - indexCount
        let layered = layout.hasValuesLayer
        var writer = ByteWriter(capacity: 12)
        writer.append(UInt32(indexCount))
        writer.append(UInt64(valuesCount + (layered ? VaultFileLayout.valuesLayerOverhead : 0)))
        header.replaceSubrange(layout.lengthsOffset..<layout.lengthsOffset + 12, with: writer.bytes)
        try reauthenticate(&header, context: context)
        let vaultID = Array(header[12..<12 + VaultFileLayout.vaultIDByteCount])
        let keys = try DataKeys(dek: context.dek, vaultID: vaultID)
        let box = try AES256GCM.seal(Array(unsealed[headerCount..<headerCount + indexCount]), using: keys.index(layout),
                                     authenticating: header)
        let values = Array(unsealed[(headerCount + indexCount)...])
        return header + box.combined + (layered ? try ValuesLayer.seal(values, dek: context.dek, vaultID: vaultID) : values)
    }

    /// The reverse of `sealed`, for the seed: the template with its index decrypted in place.
    private static func unsealed(_ file: [UInt8], context: FuzzContext) throws -> [UInt8] {
        let (plain, values) = try plainIndex(of: file, context: context)
        return Array(file[0..<layout(of: file).headerByteCount]) + plain + values
    }

    private static func plainIndex(of file: [UInt8], context: FuzzContext) throws -> (index: [UInt8], values: [UInt8]) {
        let header = try VaultFileHeader.parse(file, path: nil)
        let keys = try DataKeys(dek: context.dek, vaultID: header.vaultID)
        let start = header.layout.headerByteCount
        let end = header.valuesStart
        let plain = try AES256GCM.open(try AES256GCM.SealedBox(combined: file[start..<end]), using: keys.index(header.layout),
                                       authenticating: Array(file[0..<start]))
        let values = header.layout.hasValuesLayer
            ? try ValuesLayer.open(file[end...], dek: context.dek, vaultID: header.vaultID, path: nil) : Array(file[end...])
        return (plain.withUnsafeBytes { Array($0) }, values)
    }

    // MARK: - vault-index

    /// Input: a big-endian u16 whose top bit selects format v2 (with the next bit: v3, whose values
    /// region counts the layer's 32-byte salt) and whose other 14 bits are `n`, then the plaintext
    /// index, then `n` bytes of values (fewer if the input is short).
    static func vaultIndex(_ input: [UInt8], context: FuzzContext) throws(FuzzFinding) -> FuzzOutcome {
        guard input.count >= 2 else { return .rejected(.corrupt) }
        let rest = input[2...]
        let valuesCount = min(Int(input[0] & 0x3F) << 8 | Int(input[1]), rest.count)
        let plain = Array(rest.dropLast(valuesCount))
        let values = Array(rest.suffix(valuesCount))
        let vaultID = context.templateHeader.vaultID, generation = context.templateHeader.generation
        if input[0] & 0x80 != 0 {
            return try vaultIndexV2(plain: plain, values: values, vaultID: vaultID,
                                    regionOverhead: input[0] & 0x40 != 0 ? VaultFileLayout.valuesLayerOverhead : 0)
        }
        let entries: [SealedEntry]
        do {
            // `.init` converts to whatever collection `decode` takes for the values section.
            entries = try IndexCodec.decode(plain, vaultID: vaultID, generation: generation, values: .init(values), path: nil)
        } catch {
            return try expect(error, in: [.tampered, .corrupt], from: "IndexCodec.decode")
        }
        // Decoding is strict, so an accepted index is the one encoding of its entries (plus zero padding).
        let encoded = IndexCodec.encode(entries, vaultID: vaultID, generation: generation)
        guard encoded.count <= plain.count, encoded[...] == plain[0..<encoded.count],
              plain[encoded.count...].allSatisfy({ $0 == 0 }) else {
            throw FuzzFinding("an accepted index does not re-encode to the same bytes")
        }
        guard entries.flatMap(\.ciphertext) == values else {
            throw FuzzFinding("an accepted index does not account for exactly the values section")
        }
        for (previous, next) in zip(entries, entries.dropFirst()) where !(previous.key < next.key) {
            throw FuzzFinding("an accepted index is not strictly ascending")
        }
        return .accepted
    }

    /// The v2 and v3 half of `vault-index`: `values` is the padded values region (v3: with the
    /// layer taken off, so `regionOverhead` bytes short of the region's padded size).
    private static func vaultIndexV2(plain: [UInt8], values: [UInt8], vaultID: [UInt8],
                                     regionOverhead: Int) throws(FuzzFinding) -> FuzzOutcome {
        let contents: IndexContents
        do {
            contents = try IndexCodec.decodeV2(plain, vaultID: vaultID, valuesRegion: values[...], regionOverhead: regionOverhead, path: nil)
        } catch {
            return try expect(error, in: [.tampered, .corrupt], from: "IndexCodec.decodeV2")
        }
        guard let stateKey = contents.stateKey else { throw FuzzFinding("a v2 index decoded without a state key") }
        var encoded = IndexCodec.encodeV2(contents.entries, vaultID: vaultID, generation: contents.generation, stateKey: stateKey)
        encoded += [UInt8](repeating: 0, count: IndexCodec.paddedV2Length(unpadded: encoded.count) - encoded.count)
        guard encoded == plain else { throw FuzzFinding("an accepted v2 index does not re-encode to the same bytes") }
        let claimed = contents.entries.flatMap(\.ciphertext)
        guard claimed[...] == values.prefix(claimed.count), values[claimed.count...].allSatisfy({ $0 == 0 }) else {
            throw FuzzFinding("an accepted v2 index does not account for exactly the values region")
        }
        return .accepted
    }

    // MARK: - byte-reader

    /// Input: a program length `p`, `p` opcodes, then the bytes to read. Each opcode reads an
    /// integer, a run of bytes, or deliberately too many bytes; the reader must agree with a
    /// simple model on every value, offset and failure.
    static func byteReader(_ input: [UInt8]) throws(FuzzFinding) -> FuzzOutcome {
        guard let first = input.first else { return .rejected(.corrupt) }
        let programCount = min(Int(first), input.count - 1)
        let program = input[1..<(1 + programCount)]
        let data = Array(input[(1 + programCount)...])
        var reader = ByteReader(data, region: "fuzz")
        var offset = 0
        var outcome = FuzzOutcome.accepted
        for opcode in program {
            let argument = Int(opcode >> 3)
            let remaining = data.count - offset
            let count: Int
            switch opcode & 7 {
            case 0: count = 1
            case 1: count = 2
            case 2: count = 4
            case 3, 4: count = 8
            case 5: count = argument
            case 6: count = remaining + 1 + argument
            default: count = -1 - argument
            }
            let shouldSucceed = count >= 0 && count <= remaining
            do {
                var got: [UInt8] = []
                switch opcode & 7 {
                case 0: got = bigEndian(UInt64(try reader.readUInt8()), count)
                case 1: got = bigEndian(UInt64(try reader.readUInt16()), count)
                case 2: got = bigEndian(UInt64(try reader.readUInt32()), count)
                case 3: got = bigEndian(try reader.readUInt64(), count)
                case 4: got = bigEndian(UInt64(bitPattern: try reader.readInt64()), count)
                default: got = Array(try reader.readBytes(count))
                }
                guard shouldSucceed else { throw FuzzFinding("ByteReader read \(count) bytes with \(remaining) left") }
                guard got[...] == data[offset..<(offset + count)] else { throw FuzzFinding("ByteReader returned wrong bytes") }
                offset += count
            } catch let finding as FuzzFinding {
                throw finding
            } catch {
                guard !shouldSucceed else { throw FuzzFinding("ByteReader refused \(count) bytes with \(remaining) left") }
                outcome = try expect(error, in: [.corrupt], from: "ByteReader")
            }
            guard reader.offset == offset, reader.remaining == data.count - offset else {
                throw FuzzFinding("ByteReader's offset is \(reader.offset), expected \(offset)")
            }
        }
        return outcome
    }

    private static func bigEndian(_ value: UInt64, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(count - 1 - $0))) }
    }

    // MARK: - profile

    /// Parses as JSON and as a profile; whatever is accepted must read back the same after a rewrite.
    static func profile(_ input: [UInt8]) throws(FuzzFinding) -> FuzzOutcome {
        do {
            let value = try JSONValue(parsing: input)
            for pretty in [false, true] {
                let again = try JSONValue(parsing: try value.serialized(prettyPrinted: pretty))
                guard again == value else { throw FuzzFinding("a JSON value changes when written and read back") }
            }
        } catch let finding as FuzzFinding {
            throw finding
        } catch {
            try expect(error, in: [.invalidInput], from: "JSONValue(parsing:)")
        }

        let path = "/fuzz/profile.json"
        let profile: Profile
        do {
            profile = try ProfileStore.decode(input, path: path)
        } catch {
            return try expect(error, in: [.corrupt, .unsupportedVersion], from: "ProfileStore.decode")
        }
        do {
            // A rewrite may round startedAt to whole milliseconds, nothing else; a second rewrite changes nothing.
            let once = try ProfileStore.decode(try profile.jsonValue().serialized(prettyPrinted: true), path: path)
            let twice = try ProfileStore.decode(try once.jsonValue().serialized(prettyPrinted: true), path: path)
            var rounded = profile
            rounded.pendingSignIn?.startedAt = once.pendingSignIn?.startedAt ?? Date(timeIntervalSince1970: 0)
            let drift = abs((profile.pendingSignIn?.startedAt.timeIntervalSince1970 ?? 0)
                - (once.pendingSignIn?.startedAt.timeIntervalSince1970 ?? 0))
            guard once == rounded, drift < 0.001, twice == once else {
                throw FuzzFinding("a profile changes when written and read back")
            }
        } catch let finding as FuzzFinding {
            throw finding
        } catch {
            throw FuzzFinding("an accepted profile cannot be written and read back: \(error)")
        }
        return .accepted
    }

    // MARK: - tokens

    /// Reads the input as a JWT and as a token response. Errors must be `.invalidInput` and
    /// must not quote any token-sized piece of the input.
    static func tokens(_ input: [UInt8]) throws(FuzzFinding) -> FuzzOutcome {
        let text = String(decoding: input, as: UTF8.self)
        // Pieces that would be secret in a real token: the dot-separated parts and the whole.
        let jwtPieces = ([text] + text.split(separator: ".").map(String.init)).filter(isTokenLike)
        let token = SecureBytes(copying: input)
        var jwtOutcome = FuzzOutcome.accepted
        do {
            let decoded = try JWT.decode(token)
            if let expires = decoded.expiresAt, !(0...ISO8601Timestamp.latest).contains(expires.timeIntervalSince1970) {
                throw FuzzFinding("JWT expiry outside year 0...9999")
            }
        } catch let finding as FuzzFinding {
            throw finding
        } catch {
            jwtOutcome = try expect(error, in: [.invalidInput], from: "JWT.decode", mustNotContain: jwtPieces)
        }
        _ = JWT.expiry(of: token)

        var secrets: [String] = [], shownByDesign: [String] = []
        if case .object(let members)? = try? JSONParser.parse(input) {
            // Members that messages and descriptions show on purpose: a token inside one of them is not a leak.
            let shown = ["error", "token_type", "scope"].compactMap { members[$0]?.stringValue }
                + (members["scope"]?.arrayValue ?? []).compactMap(\.stringValue)
            for name in ["access_token", "refresh_token", "id_token"] {
                if case .string(let value)? = members[name], isTokenLike(value),
                   !shown.contains(where: { $0.contains(value) }) {
                    secrets.append(value)
                }
            }
            shownByDesign = shown
        }
        var responseOutcome = FuzzOutcome.accepted
        do {
            let credentials = try TokenResponse.parse(input, receivedAt: Date(timeIntervalSince1970: 1_800_000_000))
            // The description must not depend on the token bytes at all.
            var other = credentials
            other.accessToken = SecureBytes(copying: Array("other-access".utf8))
            other.refreshToken = credentials.refreshToken.map { _ in SecureBytes(copying: Array("other-refresh".utf8)) }
            other.idToken = credentials.idToken.map { _ in SecureBytes(copying: Array("other-id".utf8)) }
            guard credentials.description == other.description, credentials.debugDescription == other.debugDescription else {
                throw FuzzFinding("Credentials.description depends on the token bytes")
            }
            if let expires = credentials.expiresAt, !(0...ISO8601Timestamp.latest).contains(expires.timeIntervalSince1970) {
                throw FuzzFinding("token expiry outside year 0...9999")
            }
        } catch let finding as FuzzFinding {
            throw finding
        } catch {
            responseOutcome = try expect(error, in: [.invalidInput], from: "TokenResponse.parse", mustNotContain: secrets,
                                         shownByDesign: shownByDesign)
        }
        if let oauthError = TokenResponse.parseError(input), oauthError.error.isEmpty {
            throw FuzzFinding("parseError returned an empty error code")
        }
        return jwtOutcome == .accepted ? jwtOutcome : responseOutcome
    }

    // MARK: - Helpers

    /// Long enough, and mixed enough, that finding it in an error message means the message
    /// quotes the input rather than happening to share a word with it.
    private static func isTokenLike(_ text: String) -> Bool {
        text.utf8.count >= 16 && !text.contains(where: \.isWhitespace)
            && text.contains(where: \.isNumber) && text.contains(where: \.isLetter)
    }

    /// Throws a finding unless `error` is a `VaultError` with one of `codes` whose text quotes none of `secrets`.
    /// - Returns: `.rejected` with the error's code.
    @discardableResult
    /// Text in `shownByDesign` (say, an OAuth error code the message quotes on purpose) is cut out first.
    private static func expect(_ error: any Error, in codes: Set<VaultError.Code>, from function: String,
                               mustNotContain secrets: [String] = [], shownByDesign: [String] = []) throws(FuzzFinding) -> FuzzOutcome {
        guard let vaultError = error as? VaultError else {
            throw FuzzFinding("\(function) threw \(type(of: error)), not a VaultError: \(error)")
        }
        guard codes.contains(vaultError.code) else {
            throw FuzzFinding("\(function) threw code \(vaultError.code), expected one of \(codes.map(\.rawValue).sorted()): \(vaultError)")
        }
        var text = vaultError.description
        for shown in shownByDesign where shown.count >= 4 { text = text.replacingOccurrences(of: shown, with: "\u{0}") }
        if secrets.contains(where: { text.contains($0) }) {
            throw FuzzFinding("\(function)'s error message quotes part of the input: \(text)")
        }
        return .rejected(vaultError.code)
    }
}
