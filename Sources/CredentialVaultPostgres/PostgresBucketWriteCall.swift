import NIOCore
import PostgresNIO

/// The write of one entry to a version 3 store in one round trip, prepared: `CALL
/// vault_bucket_write_v3(…)` (`PostgresSchema.createWriteProcedure`), the compare-and-set of
/// `PostgresBucketEntryPut`/`Remove` and the COMMIT inside the procedure. Its one row, the number
/// of bucket rows saved, arrives only after the commit (with its wait for a synchronous standby),
/// and a failed commit fails the call, so the answer acknowledges a committed write.
struct PostgresBucketWriteCall: PostgresBucketWriteStatement {
    static let name = "vault_bucket_write_call_v3"
    static let sql = "CALL vault_bucket_write_v3($1, $2, $3, $4, $5, $6, $7, NULL)"
    static let bindingDataTypes: [PostgresDataType] = [.bytea, .bytea, .int8, .bytea, .int4, .bytea, .bytea]
    static let bindsEntry = true
    /// What is written (`sealed` nil: a removal).
    var write: PostgresBucketWrite

    /// True for a server error that says the procedure cannot be used here, raised before it
    /// wrote anything: missing (42883), not a procedure (42809), not allowed (42501), or its COMMIT
    /// refused because the call runs inside a transaction (2D000, 0A000; a pooler's wrapping).
    static func isUnavailable(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, error.code == .server, let state = error.serverInfo?[.sqlState] else { return false }
        return ["42883", "42809", "42501", "2D000", "0A000"].contains(state)
    }
}

/// Thrown by a write whose call of `vault_bucket_write_v3` was refused as unavailable
/// (`PostgresBucketWriteCall.isUnavailable`): nothing was written, and the write is sent again without it.
struct PostgresWriteProcedureUnavailable: Error {
    /// The server's SQLSTATE, for the log.
    var sqlState: String
}
