@testable import CredentialVaultPostgres
import CredentialVault
import Foundation
import Synchronization

/// What the bucketed-layout suites need to reach one store's rows by hand in SQL: its vault id,
/// an entry's lookup and bucket, the WHERE conditions of its entry row and its bucket row, and
/// names that fall in one bucket or in different ones.
protocol PostgresBucketRowQueries {}

extension PostgresBucketRowQueries {
    /// `bytes` as lowercase hex.
    func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// The store's vault id as an SQL bytea expression.
    func vault(_ store: PostgresSecretStore) -> String { "decode('\(hex(store.vaultID))', 'hex')" }

    /// The lookup of the entry `name` of `owner`.
    func lookup(_ store: PostgresSecretStore, _ name: String, owner: String = "") throws -> [UInt8] {
        try PostgresRowCodec.lookup(owner: owner, name: name, keys: store.keys)
    }

    /// The bucket of the entry `name` of `owner`; the store must be bucketed.
    func bucket(_ store: PostgresSecretStore, _ name: String, owner: String = "") throws -> UInt32 {
        guard case let .buckets(bits) = store.layout.withLock({ $0 }) else { throw VaultError.corrupt("not bucketed") }
        return PostgresBucket.index(of: try lookup(store, name, owner: owner), bits: bits)
    }

    /// The WHERE condition of the entry row of `name`.
    func rowCondition(_ store: PostgresSecretStore, _ name: String) throws -> String {
        "vault_id = \(vault(store)) AND lookup = decode('\(hex(try lookup(store, name)))', 'hex')"
    }

    /// The WHERE condition of the bucket row holding `name`.
    func bucketCondition(_ store: PostgresSecretStore, _ name: String) throws -> String {
        "vault_id = \(vault(store)) AND bucket = \(try bucket(store, name))"
    }

    /// Names `count` entries in one bucket (`sameBucket`) or each in its own, among the first
    /// 200,000 names "n0", "n1", ...
    func names(_ store: PostgresSecretStore, count: Int, sameBucket: Bool) throws -> [String] {
        var found: [String] = []
        var buckets: Set<UInt32> = []
        for index in 0..<200_000 where found.count < count {
            let name = "n\(index)"
            let number = try bucket(store, name)
            if sameBucket ? (buckets.isEmpty || buckets.contains(number)) : !buckets.contains(number) {
                found.append(name)
                buckets.insert(number)
            }
        }
        return found
    }
}
