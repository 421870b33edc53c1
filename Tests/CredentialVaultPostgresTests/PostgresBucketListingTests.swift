@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Testing
import VaultCrypto

/// The read-only open of a bucket row (`PostgresBucketListing`, for `secret(named:)`) against the
/// write's (`PostgresBucket.open`): the same answers for every lookup, and the same refusal of
/// every hostile listing. No server.
@Suite("PostgreSQL buckets: the read-only listing agrees with the write's open")
struct PostgresBucketListingTests {
    private let vaultID = Array(repeating: UInt8(9), count: 16)
    private let bucket: UInt32 = 0xABC   // of 4,096 (12 bits)

    private func keys() throws -> PostgresDataKeys {
        try PostgresDataKeys(dek: SymmetricKey(bytes: SecureBytes(copying: try SecureRandom.bytes(count: 32))), vaultID: vaultID)
    }

    /// A lookup of bucket 0xABC (bits 12) whose remaining bytes are `tail`.
    private func lookup(_ tail: UInt8, in bucket: UInt32 = 0xABC) -> [UInt8] {
        [UInt8(bucket >> 4), UInt8((bucket & 0xF) << 4) | 0x01] + Array(repeating: tail, count: 30)
    }

    /// A bucket plaintext sealed as a bucket row is, with any content (hostile ones included).
    private func sealRaw(generation: UInt64?, count: UInt32?, entries: [([UInt8], UInt64)], keys: PostgresDataKeys,
                         extra: [UInt8] = []) throws -> [UInt8] {
        var plain: [UInt8] = []
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.bigEndian) { plain.append(contentsOf: $0) } }
        if let generation { append(generation) }
        if let count { append(count) }
        for (lookup, rowGeneration) in entries {
            plain.append(contentsOf: lookup)
            append(rowGeneration)
        }
        plain.append(contentsOf: extra)
        return try AES256GCM.seal(plain, using: keys.bucket,
                                  authenticating: PostgresBucket.aad(vaultID: vaultID, storeName: "s", bucket: bucket)).combined
    }

    /// Both opens of `sealed`: equal results, or both refuse with the same code and message.
    private func expectBothAgree(_ sealed: [UInt8], keys: PostgresDataKeys, probes: [[UInt8]], refused: Bool,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        let asWrite = Result { try PostgresBucket.open(sealed, vaultID: vaultID, storeName: "s", bucket: bucket, bits: 12, keys: keys) }
        let asRead = Result { try PostgresBucketListing.open(sealed, vaultID: vaultID, storeName: "s", bucket: bucket, bits: 12, keys: keys) }
        switch (asWrite, asRead) {
        case let (.success(written), .success(read)):
            #expect(!refused, "a hostile listing opened", sourceLocation: sourceLocation)
            #expect(written.generation == read.generation && written.rows.count == read.count, sourceLocation: sourceLocation)
            for probe in probes {
                #expect(written.rows[probe] == read.rowGeneration(of: probe), sourceLocation: sourceLocation)
            }
        case let (.failure(writeError), .failure(readError)):
            #expect(refused, "a valid listing refused: \(writeError)", sourceLocation: sourceLocation)
            let write = writeError as? VaultError
            let read = readError as? VaultError
            #expect(write != nil && write == read, "write: \(writeError), read: \(readError)", sourceLocation: sourceLocation)
        default:
            Issue.record("the opens disagree: write \(asWrite), read \(asRead)", sourceLocation: sourceLocation)
        }
    }

    @Test("every listed lookup has its generation, every other none, in buckets of 0, 1, 2, 25 and 300 entries")
    func sameAnswers() throws {
        let keys = try keys()
        for size in [0, 1, 2, 25, 300] {
            var rows: [[UInt8]: UInt64] = [:]
            var probes: [[UInt8]] = [lookup(0x00), lookup(0xFF)]
            for index in 0..<size {
                var listed = lookup(0x00)
                listed[2] = UInt8(index % 256)
                listed[3] = UInt8(index / 256) &+ 1
                rows[listed] = UInt64(index % 7 + 1)
                probes.append(listed)
                var between = listed
                between[31] = 0x02   // sorts after `listed`, never listed itself
                probes.append(between)
            }
            let bucketRow = PostgresBucket(generation: 9, rows: rows)
            let sealed = try bucketRow.sealed(vaultID: vaultID, storeName: "s", bucket: bucket, keys: keys)
            expectBothAgree(sealed, keys: keys, probes: probes, refused: false)
            let listing = try PostgresBucketListing.open(sealed, vaultID: vaultID, storeName: "s", bucket: bucket, bits: 12, keys: keys)
            #expect(listing.count == size)
            for (listed, generation) in rows { #expect(listing.rowGeneration(of: listed) == generation) }
            #expect(listing.rowGeneration(of: lookup(0xFF)) == nil)
        }
    }

    @Test("both refuse the same hostile listings: out of order, a lookup twice, another bucket's, generation 0 or above the bucket's, lengths")
    func sameRefusals() throws {
        let keys = try keys()
        let a = lookup(0x10)
        let b = lookup(0x20)
        let hostile: [[UInt8]] = [
            try sealRaw(generation: 5, count: 2, entries: [(b, 1), (a, 1)], keys: keys),               // descending
            try sealRaw(generation: 5, count: 2, entries: [(a, 1), (a, 1)], keys: keys),               // a lookup twice
            try sealRaw(generation: 5, count: 2, entries: [(a, 2), (a, 1)], keys: keys),               // twice, other generations
            try sealRaw(generation: 5, count: 1, entries: [(lookup(0x10, in: 0xABD), 1)], keys: keys), // another bucket's lookup
            try sealRaw(generation: 5, count: 1, entries: [(a, 0)], keys: keys),                       // row generation 0
            try sealRaw(generation: 5, count: 1, entries: [(a, 6)], keys: keys),                       // newer than its bucket
            try sealRaw(generation: 5, count: 2, entries: [(a, 1)], keys: keys),                       // count above the entries
            try sealRaw(generation: 5, count: 0, entries: [(a, 1)], keys: keys),                       // count below the entries
            try sealRaw(generation: 5, count: 1, entries: [(a, 1)], keys: keys, extra: [0]),           // a byte too many
            try sealRaw(generation: 5, count: nil, entries: [], keys: keys),                           // no count
            try sealRaw(generation: nil, count: nil, entries: [], keys: keys, extra: [1, 2, 3]),       // no generation
            try sealRaw(generation: 5, count: UInt32.max, entries: [(a, 1)], keys: keys),              // a huge count
        ]
        for sealed in hostile { expectBothAgree(sealed, keys: keys, probes: [a, b], refused: true) }
        // Valid raw listings are opened by both (the raw sealing is the codec's).
        expectBothAgree(try sealRaw(generation: 5, count: 2, entries: [(a, 5), (b, 1)], keys: keys), keys: keys, probes: [a, b], refused: false)
        // Altered, or opened as another bucket or store: both refuse.
        var altered = try sealRaw(generation: 5, count: 1, entries: [(a, 1)], keys: keys)
        altered[altered.count / 2] ^= 1
        expectBothAgree(altered, keys: keys, probes: [a], refused: true)
        let other = try PostgresBucket(generation: 5, rows: [a: 1]).sealed(vaultID: vaultID, storeName: "t", bucket: bucket, keys: keys)
        expectBothAgree(other, keys: keys, probes: [a], refused: true)
        expectBothAgree([1, 2, 3], keys: keys, probes: [a], refused: true)
    }
}
