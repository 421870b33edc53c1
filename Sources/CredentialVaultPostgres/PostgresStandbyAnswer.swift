/// A statement was answered by a server in recovery (a hot standby): its rows may be older than
/// the primary's, so they are never used as current.
///
/// Thrown by a read whose statement also selects `pg_is_in_recovery()` when that is true. The
/// store's primary selection treats it as a lost primary: it marks the selection stale, the read
/// is retried once on the newly selected primary, and a caller that still meets it sees
/// `.serverUnavailable` (never the standby's rows).
struct PostgresStandbyAnswer: Error, Sendable {}
