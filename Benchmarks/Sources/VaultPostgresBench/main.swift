// The PostgreSQL store's size axis (issue 38): for each store size, the fill, then latency and
// throughput of `secret(named:)`, `put` and a fleet refresh through the library with 1, 8 and 32
// concurrent clients, next to their floors on a pool of the same size: a bare one-row SELECT of a
// bytea by primary key and a bare one-row INSERT … ON CONFLICT DO UPDATE in its own transaction,
// on a table of as many rows, of the same size as the store's, read and written at random keys.
// Run by scripts/bench-postgres (which starts a real PostgreSQL); not a product.
//
//   VaultPostgresBench URL [OPERATIONS] [CLIENTS...]      (default 2000 operations; 1 8 32 clients)
//   VAULT_BENCH_SIZES="100 10000 100000"   store sizes (VAULT_BENCH_ENTRIES=N: that size alone)
//   VAULT_BENCH_ROUNDS=3      every figure is measured once per round, in turn (after an untimed warm-up
//                             of each at that concurrency); the median is printed, each round's figure
//                             on standard error with the server's background work that overlapped it
//   VAULT_BENCH_SECONDS=2     one measurement stops after OPERATIONS or this many seconds
//   VAULT_BENCH_SLICES=4      ... taken in 4 parts, every operation's part in turn (1: one piece each,
//                             for a profiler that waits for an operation's "measuring" line)
//   VAULT_BENCH_BATCH=1000    entries per fill transaction
//   VAULT_BENCH_FILL_SECONDS=300   a fill still running then is stopped and its size skipped
//   VAULT_BENCH_ONLY=get      the bare SELECT and secret(named:) only (for a profiler)
//   VAULT_BENCH_ONLY=put      the bare upsert and put only
//   VAULT_BENCH_PLAIN_KEY=1   vault_entries with the plain primary key of releases before 2026-11-29
//   VAULT_BENCH_VACUUM=0      ANALYZE after a fill, no VACUUM (pages not yet all-visible)
//   VAULT_BENCH_CHURN=20000   that many random puts after the fill's VACUUM, before measuring
//
// Prints Markdown tables and the issue's targets, met or missed. Never prints a secret.
import CredentialVault
import CredentialVaultPostgres
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization
import VaultCrypto

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: VaultPostgresBench URL [OPERATIONS] [CLIENTS...]\n".utf8))
    exit(64)
}
let environment = ProcessInfo.processInfo.environment
let url = arguments[1]
let operations = arguments.count > 2 ? Int(arguments[2]) ?? 2000 : 2000
let clientCounts = arguments.count > 3 ? arguments[3...].compactMap { Int($0) } : [1, 8, 32]
let sizes: [Int] = {
    if let one = environment["VAULT_BENCH_ENTRIES"].flatMap({ Int($0) }) { return [max(1, one)] }
    let listed = (environment["VAULT_BENCH_SIZES"] ?? "").split(whereSeparator: { $0 == " " || $0 == "," }).compactMap { Int($0) }
    return listed.isEmpty ? [100, 10_000, 100_000] : listed.map { max(1, $0) }
}()
let rounds = max(1, Int(environment["VAULT_BENCH_ROUNDS"] ?? "") ?? 3)
let secondsPerMeasurement = max(0.1, Double(environment["VAULT_BENCH_SECONDS"] ?? "") ?? 2)
/// Each round's measurement of an operation is taken in this many parts, the operations' parts in turn.
let slices = max(1, Int(environment["VAULT_BENCH_SLICES"] ?? "") ?? 4)
let batchSize = max(1, Int(environment["VAULT_BENCH_BATCH"] ?? "") ?? 1000)
let fillLimit = max(1, Double(environment["VAULT_BENCH_FILL_SECONDS"] ?? "") ?? 300)
let onlyGet = environment["VAULT_BENCH_ONLY"] == "get"
let onlyPut = environment["VAULT_BENCH_ONLY"] == "put"
/// The plain primary key of releases before 2026-11-29 on `vault_entries` (to compare with the covering one).
let plainKey = environment["VAULT_BENCH_PLAIN_KEY"] == "1"
/// No VACUUM after a fill (ANALYZE only): the pages as the fill left them, not all-visible.
let skipVacuum = environment["VAULT_BENCH_VACUUM"] == "0"
/// Puts of random existing names made after the fill and its VACUUM, before any measurement: the
/// state of a store that has taken that many writes since autovacuum last ran (its default
/// trigger is 20 % of the table's rows changed).
let churnPuts = max(0, Int(environment["VAULT_BENCH_CHURN"] ?? "") ?? 0)
let pool = max(clientCounts.max() ?? 8, 8)
let valueBytes = 1024
struct Missing: Error { let what: String }
/// A counter the concurrent tasks share (an Atomic cannot be captured by an escaping closure).
final class Counter: Sendable {
    let value = Atomic<Int>(0)
    /// Adds one and returns the new count.
    func next() -> Int { value.add(1, ordering: .relaxed).newValue }
}

// MARK: - Measuring

/// The server's background work at one moment: checkpoints so far and autovacuum workers running.
struct BackgroundWork {
    var checkpoints: Int64
    var autovacuumWorkers: Int64
    var autovacuumsDone: Int64

    /// What happened between this moment and `later`.
    func describe(until later: BackgroundWork) -> String {
        let checkpoints = later.checkpoints - self.checkpoints
        return "checkpoints \(checkpoints), autovacuums and autoanalyzes ended \(later.autovacuumsDone - autovacuumsDone), "
            + "autovacuum workers running \(autovacuumWorkers) → \(later.autovacuumWorkers)"
    }
}

/// `BackgroundWork` now, asked on `client` (checkpoints -1 where `pg_stat_bgwriter` no longer
/// counts them: PostgreSQL 17 moved them to `pg_stat_checkpointer`).
func backgroundWork(_ client: PostgresClient) async throws -> BackgroundWork {
    var work = BackgroundWork(checkpoints: 0, autovacuumWorkers: 0, autovacuumsDone: 0)
    for try await (checkpoints, workers, done) in try await client.query("""
        SELECT (SELECT coalesce((j->>'checkpoints_timed')::bigint + (j->>'checkpoints_req')::bigint, -1)
                FROM pg_stat_bgwriter b, row_to_json(b) j),
               (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'),
               (SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0)::bigint FROM pg_stat_all_tables)
        """).decode((Int64, Int64, Int64).self) {
        work = BackgroundWork(checkpoints: checkpoints, autovacuumWorkers: workers, autovacuumsDone: done)
    }
    return work
}

struct Figures {
    var p50: Double
    var p99: Double
    var perSecond: Double
    var count: Int
}

func seconds(_ duration: Duration) -> Double { Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18 }
func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }

/// The latencies (seconds) of one measurement, and the calls that ended within its window.
struct Sample {
    var latencies: [Double]
    /// Calls that ended by the end of the window.
    var completed: Int
    /// From the start to the deadline, or to the last call's end if all ended before it: the calls
    /// still running at the deadline are waited for but neither they nor that wait count in the
    /// rate (with 4 parts a round, that wait was up to 8 % of a part of 32 clients of `put`).
    var window: Double
}

/// Runs `body` on `clients` concurrent tasks until `operations` calls are done or the time is up;
/// every call's latency counts.
func sample(clients: Int, operations: Int, seconds limit: Double,
            _ body: @escaping @Sendable () async throws -> Void) async throws -> Sample {
    let clock = ContinuousClock()
    let started = clock.now
    let deadline = started + .milliseconds(Int(limit * 1000))
    let claimed = Counter()
    let calls = try await withThrowingTaskGroup(of: [(latency: Double, end: ContinuousClock.Instant)].self) { group in
        for _ in 0..<clients {
            group.addTask {
                var mine: [(latency: Double, end: ContinuousClock.Instant)] = []
                while claimed.next() <= operations, clock.now < deadline || mine.isEmpty {
                    let begin = clock.now
                    try await body()
                    let end = clock.now
                    mine.append((seconds(end - begin), end))
                }
                return mine
            }
        }
        var all: [(latency: Double, end: ContinuousClock.Instant)] = []
        for try await part in group { all += part }
        return all
    }
    let lastEnd = calls.map(\.end).max() ?? started
    let windowEnd = min(deadline, lastEnd)
    return Sample(latencies: calls.map(\.latency), completed: calls.filter { $0.end <= windowEnd }.count,
                  window: seconds(windowEnd - started))
}

/// The figures of `samples` taken together: p50 and p99 of all their calls, the rate of the calls
/// ended within their windows over those windows.
func figures(_ samples: [Sample]) -> Figures {
    let latencies = samples.flatMap(\.latencies).sorted()
    let window = samples.map(\.window).reduce(0, +)
    let completed = samples.map(\.completed).reduce(0, +)
    return Figures(p50: latencies[latencies.count / 2], p99: latencies[min(latencies.count - 1, latencies.count * 99 / 100)],
                   perSecond: window > 0 ? Double(completed) / window : 0, count: latencies.count)
}

/// `sample` as `Figures`.
func measure(clients: Int, operations: Int = operations, seconds limit: Double = secondsPerMeasurement,
             _ body: @escaping @Sendable () async throws -> Void) async throws -> Figures {
    figures([try await sample(clients: clients, operations: operations, seconds: limit, body)])
}

/// The fleet refresh: in each expiry round the session's access token is expired (untimed), then
/// `clients` callers ask for valid credentials at once; exactly one of them may refresh. Returns the
/// figures and the largest number of refreshes any round saw.
func measureRefresh(store: PostgresSecretStore, clients: Int, session: String) async throws -> (Figures, maxPerRound: Int, rounds: Int) {
    let clock = ContinuousClock()
    let deadline = clock.now + .milliseconds(Int(secondsPerMeasurement * 1000))
    let refreshes = Counter()
    var latencies: [Double] = []
    var timed = 0.0
    var expiryRounds = 0
    var maxPerRound = 0
    let refresher: @Sendable (SecureBytes) async throws -> Credentials = { _ in
        _ = refreshes.next()
        return Credentials(accessToken: SecureBytes(copying: try SecureRandom.bytes(count: 32)),
                           refreshToken: SecureBytes(copying: try SecureRandom.bytes(count: 32)), expiresAt: Date().addingTimeInterval(3600))
    }
    repeat {
        try await store.saveCredentials(Credentials(accessToken: SecureBytes(copying: try SecureRandom.bytes(count: 32)),
                                                    refreshToken: SecureBytes(copying: try SecureRandom.bytes(count: 32)),
                                                    expiresAt: Date().addingTimeInterval(-60)), session: session)
        refreshes.value.store(0, ordering: .relaxed)
        let begin = clock.now
        let round = try await withThrowingTaskGroup(of: Double.self) { group in
            for _ in 0..<clients {
                group.addTask {
                    let start = clock.now
                    _ = try await store.validCredentials(session: session, refresher: refresher)
                    return seconds(clock.now - start)
                }
            }
            var mine: [Double] = []
            for try await latency in group { mine.append(latency) }
            return mine
        }
        timed += seconds(clock.now - begin)
        latencies += round
        expiryRounds += 1
        maxPerRound = max(maxPerRound, refreshes.value.load(ordering: .relaxed))
        if refreshes.value.load(ordering: .relaxed) != 1 {
            FileHandle.standardError.write(Data("fleet refresh: \(refreshes.value.load(ordering: .relaxed)) refreshes in one expiry round of \(clients) callers\n".utf8))
        }
    } while latencies.count < operations && clock.now < deadline
    latencies.sort()
    return (Figures(p50: latencies[latencies.count / 2], p99: latencies[min(latencies.count - 1, latencies.count * 99 / 100)],
                    perSecond: Double(latencies.count) / timed, count: latencies.count), maxPerRound, expiryRounds)
}

// MARK: - The floors' table

struct BareSelect: PostgresPreparedStatement {
    static let sql = "SELECT sealed FROM vault_bench_floor WHERE vault_id = $1 AND lookup = $2"
    typealias Row = ByteBuffer
    var vaultID: ByteBuffer, lookup: ByteBuffer
    func makeBindings() throws -> PostgresBindings { ("\(vaultID)\(lookup)" as PostgresQuery).binds }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

struct BareUpsert: PostgresPreparedStatement {
    static let sql = """
        INSERT INTO vault_bench_floor (vault_id, lookup, row_generation, sealed) VALUES ($1, $2, $3, $4)
        ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
        """
    typealias Row = Int32
    var vaultID: ByteBuffer, lookup: ByteBuffer, generation: Int64, sealed: ByteBuffer
    func makeBindings() throws -> PostgresBindings { ("\(vaultID)\(lookup)\(generation)\(sealed)" as PostgresQuery).binds }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// The statement `secret(named:)` sends on a layout 3 store (PostgresBucketRead: the entry's bucket
/// row and entry row), sent without the library: what the server adds to the bare SELECT.
struct StoreRead: PostgresPreparedStatement {
    static let sql = """
        SELECT pg_is_in_recovery(), b.sealed, e.row_generation, e.sealed
        FROM vault_buckets b LEFT JOIN vault_entries e ON e.vault_id = b.vault_id AND e.lookup = $2
        WHERE b.vault_id = $1 AND b.bucket = $3
        """
    typealias Row = (Bool, ByteBuffer, Int64?, ByteBuffer?)
    var vaultID: ByteBuffer, lookup: ByteBuffer, bucket: Int32
    func makeBindings() throws -> PostgresBindings { ("\(vaultID)\(lookup)\(bucket)" as PostgresQuery).binds }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// The store's vault id and up to 1,000 of its (lookup, bucket) pairs, for `StoreRead`; empty when
/// the store has no `vault_buckets` (another layout).
func storeReadKeys(_ client: PostgresClient, storeName: String) async throws -> [(ByteBuffer, ByteBuffer, Int32)] {
    let present = try await client.query("SELECT to_regclass('vault_buckets') IS NOT NULL").collect().first?.decode(Bool.self) ?? false
    guard present else { return [] }
    let rows = try await client.query("""
        SELECT e.vault_id, e.lookup FROM vault_entries e JOIN vault_stores s ON s.vault_id = e.vault_id
        WHERE s.store_name = \(storeName) LIMIT 1000
        """).collect()
    return try rows.map { row in
        let (vault, lookup) = try row.decode((ByteBuffer, ByteBuffer).self)
        // Layout 3's bucket: the lookup's first 4 bytes, big-endian, shifted right by 32 − bits
        // (VAULT_BENCH_BUCKET_BITS, else the library's default, 14: 16,384 buckets).
        let bits = UInt32(ProcessInfo.processInfo.environment["VAULT_BENCH_BUCKET_BITS"].flatMap { UInt8($0) } ?? 14)
        let prefix = lookup.getBytes(at: lookup.readerIndex, length: 4) ?? [0, 0, 0, 0]
        let bucket = Int32((UInt32(prefix[0]) << 24 | UInt32(prefix[1]) << 16 | UInt32(prefix[2]) << 8 | UInt32(prefix[3])) >> (32 - bits))
        return (vault, lookup, bucket)
    }
}

/// Copies of the store's bucket and entry rows (`vault_bench_buckets`, `vault_bench_entries`, with
/// the same primary keys) for `putStatements`, which rewrites rows there and leaves the store intact.
func makePutCopies(_ client: PostgresClient, vaultID: ByteBuffer) async throws {
    _ = try await client.query("DROP TABLE IF EXISTS vault_bench_buckets, vault_bench_entries").collect()
    _ = try await client.query("CREATE TABLE vault_bench_buckets AS SELECT * FROM vault_buckets WHERE vault_id = \(vaultID)").collect()
    _ = try await client.query("ALTER TABLE vault_bench_buckets ADD PRIMARY KEY (vault_id, bucket)").collect()
    _ = try await client.query("CREATE TABLE vault_bench_entries AS SELECT * FROM vault_entries WHERE vault_id = \(vaultID)").collect()
    _ = try await client.query("ALTER TABLE vault_bench_entries ADD PRIMARY KEY (vault_id, lookup)").collect()
    _ = try await client.query("ANALYZE vault_bench_buckets, vault_bench_entries").collect()
}

/// The statements `put` sends on a layout 3 store (PostgresSecretStore+BucketWriting.swift), without
/// the library and its crypto, on the copies: lock the bucket row, read the entry row replaced (its
/// creation time), upsert the entry row, update the bucket row, each unprepared as the library sends
/// them, in one transaction; the rows are written back with the bytes read.
@Sendable func putStatements(_ client: PostgresClient, vaultID: ByteBuffer, lookup: ByteBuffer, bucket: Int32, logger quietLogger: Logger) async throws {
    try await client.withTransaction(logger: quietLogger) { connection in
        var bucketSealed: [ByteBuffer] = []
        for try await (_, sealed) in try await connection.query("""
            SELECT bucket, sealed FROM vault_bench_buckets WHERE vault_id = \(vaultID) AND bucket = ANY(\([bucket])::integer[])
            ORDER BY bucket FOR UPDATE
            """, logger: quietLogger).decode((Int32, ByteBuffer).self) { bucketSealed.append(sealed) }
        var rows: [(ByteBuffer, Int64, ByteBuffer)] = []
        for try await row in try await connection.query("""
            SELECT lookup, row_generation, sealed FROM vault_bench_entries WHERE vault_id = \(vaultID) AND lookup = ANY(\([lookup])::bytea[])
            """, logger: quietLogger).decode((ByteBuffer, Int64, ByteBuffer).self) { rows.append(row) }
        guard let row = rows.first else { throw Missing(what: "the copied entry row") }
        try await connection.query("""
            INSERT INTO vault_bench_entries (vault_id, lookup, row_generation, sealed)
            SELECT \(vaultID), u.lookup, u.row_generation, u.sealed
            FROM unnest(\([row.0])::bytea[], \([row.1 + 1])::bigint[], \([row.2])::bytea[]) AS u(lookup, row_generation, sealed)
            ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
            """, logger: quietLogger)
        try await connection.query("""
            UPDATE vault_bench_buckets b SET sealed = u.sealed
            FROM unnest(\([bucket])::integer[], \(bucketSealed)::bytea[]) AS u(bucket, sealed)
            WHERE b.vault_id = \(vaultID) AND b.bucket = u.bucket
            """, logger: quietLogger)
    }
}

/// What `putStatements` could be in 4 round trips instead of 6 (a proposal, measured on the same
/// copies): the bucket row locked and the replaced entry row read in one statement, the entry upsert
/// and the bucket update in one statement (a data-modifying WITH), between BEGIN and COMMIT.
@Sendable func mergedPutStatements(_ client: PostgresClient, vaultID: ByteBuffer, lookup: ByteBuffer, bucket: Int32, logger quietLogger: Logger) async throws {
    try await client.withTransaction(logger: quietLogger) { connection in
        var read: [(ByteBuffer, Int64?, ByteBuffer?)] = []
        for try await row in try await connection.query("""
            SELECT b.sealed, e.row_generation, e.sealed FROM vault_bench_buckets b
            LEFT JOIN vault_bench_entries e ON e.vault_id = b.vault_id AND e.lookup = \(lookup)
            WHERE b.vault_id = \(vaultID) AND b.bucket = ANY(\([bucket])::integer[]) ORDER BY b.bucket FOR UPDATE OF b
            """, logger: quietLogger).decode((ByteBuffer, Int64?, ByteBuffer?).self) { read.append(row) }
        guard let (bucketSealed, generation, sealed) = read.first, let generation, let sealed else { throw Missing(what: "the copied rows") }
        try await connection.query("""
            WITH entries AS (
                INSERT INTO vault_bench_entries (vault_id, lookup, row_generation, sealed)
                SELECT \(vaultID), u.lookup, u.row_generation, u.sealed
                FROM unnest(\([lookup])::bytea[], \([generation + 1])::bigint[], \([sealed])::bytea[]) AS u(lookup, row_generation, sealed)
                ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
                RETURNING 1)
            UPDATE vault_bench_buckets b SET sealed = u.sealed
            FROM unnest(\([bucket])::integer[], \([bucketSealed])::bytea[]) AS u(bucket, sealed)
            WHERE b.vault_id = \(vaultID) AND b.bucket = u.bucket
            """, logger: quietLogger)
    }
}

/// `mergedPutStatements`' lock-and-read as a named prepared statement, for one entry (no arrays).
struct LockBucketReadEntry: PostgresPreparedStatement {
    static let sql = """
        SELECT b.sealed, e.row_generation, e.sealed FROM vault_bench_buckets b
        LEFT JOIN vault_bench_entries e ON e.vault_id = b.vault_id AND e.lookup = $2
        WHERE b.vault_id = $1 AND b.bucket = $3 FOR UPDATE OF b
        """
    typealias Row = (ByteBuffer, Int64?, ByteBuffer?)
    var vaultID: ByteBuffer, lookup: ByteBuffer, bucket: Int32
    func makeBindings() throws -> PostgresBindings { ("\(vaultID)\(lookup)\(bucket)" as PostgresQuery).binds }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// `mergedPutStatements`' write (entry upsert and bucket update in one statement) as a named
/// prepared statement, for one entry (no arrays).
struct WriteEntryAndBucket: PostgresPreparedStatement {
    static let sql = """
        WITH entries AS (
            INSERT INTO vault_bench_entries (vault_id, lookup, row_generation, sealed) VALUES ($1, $2, $3, $4)
            ON CONFLICT (vault_id, lookup) DO UPDATE SET row_generation = EXCLUDED.row_generation, sealed = EXCLUDED.sealed
            RETURNING 1)
        UPDATE vault_bench_buckets SET sealed = $5 WHERE vault_id = $1 AND bucket = $6
        """
    typealias Row = Int32
    var vaultID: ByteBuffer, lookup: ByteBuffer, generation: Int64, sealed: ByteBuffer, bucketSealed: ByteBuffer, bucket: Int32
    func makeBindings() throws -> PostgresBindings {
        ("\(vaultID)\(lookup)\(generation)\(sealed)\(bucketSealed)\(bucket)" as PostgresQuery).binds
    }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

/// `mergedPutStatements` with both statements prepared and without arrays (a proposal).
@Sendable func preparedPutStatements(_ client: PostgresClient, vaultID: ByteBuffer, lookup: ByteBuffer, bucket: Int32, logger quietLogger: Logger) async throws {
    try await client.withTransaction(logger: quietLogger) { connection in
        var read: [(ByteBuffer, Int64?, ByteBuffer?)] = []
        for try await row in try await connection.execute(LockBucketReadEntry(vaultID: vaultID, lookup: lookup, bucket: bucket),
                                                          logger: quietLogger) { read.append(row) }
        guard let (bucketSealed, generation, sealed) = read.first, let generation, let sealed else { throw Missing(what: "the copied rows") }
        for try await _ in try await connection.execute(WriteEntryAndBucket(vaultID: vaultID, lookup: lookup, generation: generation + 1, sealed: sealed,
                                                                            bucketSealed: bucketSealed, bucket: bucket), logger: quietLogger) {}
    }
}

/// The average size of a row of the store's entries (`vault_entries`; else its largest table).
/// Vacuums the database first: a store that has lived a while has been vacuumed by autovacuum (its
/// pages all-visible, so a write's read of its bucket is an index-only scan); one measured right
/// after its fill would be a state no fleet store is in for long.
func storeRowBytes(_ client: PostgresClient) async throws -> Int {
    _ = try await client.query(skipVacuum ? "ANALYZE" : "VACUUM (ANALYZE)").collect()
    let table = try await client.query("""
        SELECT relname FROM pg_stat_user_tables WHERE relname <> 'vault_bench_floor'
        ORDER BY relname = 'vault_entries' DESC, n_live_tup DESC LIMIT 1
        """).collect().first?.decode(String.self) ?? { throw Missing(what: "the store's tables") }()
    let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    let average = try await client.query(PostgresQuery(unsafeSQL: "SELECT coalesce(avg(pg_column_size(t.*)), 0)::int FROM \(quoted) t"))
        .collect().first?.decode(Int32.self) ?? 0
    return max(64, Int(average))
}

/// Makes `vault_bench_floor` anew with `count` rows of about `rowBytes` each (random, incompressible
/// bytes, the shape of the store's entry rows) and returns its keys.
func makeFloorTable(_ client: PostgresClient, count: Int, rowBytes: Int) async throws -> [ByteBuffer] {
    _ = try await client.query("DROP TABLE IF EXISTS vault_bench_floor").collect()
    try await client.query("""
        CREATE TABLE vault_bench_floor (vault_id bytea NOT NULL, lookup bytea NOT NULL, row_generation bigint NOT NULL,
                                        sealed bytea NOT NULL, PRIMARY KEY (vault_id, lookup))
        """).collect()
    let sealedBytes = max(16, rowBytes - 100)
    let chunks = (sealedBytes + 15) / 16
    try await client.query("""
        INSERT INTO vault_bench_floor
        SELECT '\\x00112233445566778899aabbccddeeff'::bytea, sha256(int8send(i)), 1,
               substring((SELECT decode(string_agg(md5(random()::text || i::text || j::text), ''), 'hex')
                          FROM generate_series(1, \(unescaped: String(chunks))) j) FROM 1 FOR \(unescaped: String(sealedBytes)))
        FROM generate_series(1, \(unescaped: String(count))) i
        """).collect()
    _ = try await client.query(skipVacuum ? "ANALYZE vault_bench_floor" : "VACUUM (ANALYZE) vault_bench_floor").collect()
    return try await client.query("SELECT lookup FROM vault_bench_floor").collect().map { try $0.decode(ByteBuffer.self) }
}

// MARK: - Filling the store

/// Puts `count` entries named entry-0… with `put(contentsOf:)`, `batchSize` per transaction,
/// stopping at `fillLimit`. Returns how many went in and the seconds it took.
func fill(_ store: PostgresSecretStore, count: Int, value: SecureBytes) async throws -> (Int, Double) {
    let clock = ContinuousClock()
    let started = clock.now
    let deadline = started + .milliseconds(Int(fillLimit * 1000))
    var done = 0
    while done < count, clock.now < deadline {
        let batch = (done..<min(count, done + batchSize)).map { NewEntry(name: "entry-\($0)", secret: value) }
        try await store.put(contentsOf: batch)
        done += batch.count
    }
    return (done, seconds(clock.now - started))
}

// MARK: - The run

struct Result {
    var size: Int
    var clients: Int
    var figures: [String: Figures]
    var refreshesPerRound: Int
}

let quietLogger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
// The floors' client: the URL's first host (scripts/postgres-server's loopback server, trust authentication).
guard let parts = URLComponents(string: url), let host = parts.host, let user = parts.user else { throw Missing(what: "a postgres://USER@HOST URL") }
var floorConfiguration = PostgresClient.Configuration(host: host, port: parts.port ?? 5432, username: user, password: nil,
                                                      database: String(parts.path.dropFirst()), tls: .disable)
floorConfiguration.options.maximumConnections = pool
let floorClient = PostgresClient(configuration: floorConfiguration, backgroundLogger: quietLogger)
let floorRunner = Task { await floorClient.run() }
let key = VaultKey.keyMaterial(SecureBytes(copying: try SecureRandom.bytes(count: 32)))
let value = SecureBytes(copying: try SecureRandom.bytes(count: valueBytes))
var options = PostgresSecretStore.Options(operationTimeout: .seconds(120))
// VAULT_BENCH_BUCKET_BITS=12: the stores are created with 2^12 buckets (default: the library's, 14).
if let bits = environment["VAULT_BENCH_BUCKET_BITS"].flatMap(UInt8.init) { options.bucketBits = bits }
var results: [Result] = []

print("Values of \(valueBytes) bytes; fill in transactions of \(batchSize) entries (`put(contentsOf:)`).")
print("Each figure: the median of \(rounds) rounds, after an untimed warm-up; a round's measurement is \(operations) operations or \(secondsPerMeasurement) s, whichever ends first,")
print("taken in \(slices) parts, every operation's part in turn (the floors and the library's operations see the same moments of the machine).")
print("Floors: prepared statements through postgres-nio on a pool of \(pool) connections, on `vault_bench_floor`, a table of as many rows as the store")
print("(same row size, random incompressible bytes); the upsert is `BEGIN; INSERT … ON CONFLICT DO UPDATE; COMMIT`.")
print()
print("| entries | operation | clients | p50 | p99 | operations/s | vs floor (p50) |")
print("|---:|---|---:|---:|---:|---:|---:|")
func ms(_ value: Double) -> String { String(format: "%.2f ms", value * 1000) }
func ratio(_ value: Double) -> String { String(format: "%.2f×", value) }

for size in sizes {
    var configuration = try PostgresStoreConfiguration(url: url, storeName: "bench-" + UUID().uuidString)
    configuration.maximumConnections = pool
    let store = try await PostgresSecretStore.create(configuration: configuration, key: key, options: options)
    if plainKey {
        // As the store's tables were before 2026-11-29 (docs/CLI.md moves them the other way).
        _ = try await floorClient.query("""
            DO $$ BEGIN
              IF (SELECT indnatts FROM pg_index WHERE indrelid = 'vault_entries'::regclass AND indisprimary) = 3 THEN
                ALTER TABLE vault_entries DROP CONSTRAINT vault_entries_pkey, ADD PRIMARY KEY (vault_id, lookup);
              END IF;
            END $$
            """).collect()
    }
    let (filled, fillSeconds) = try await fill(store, count: size, value: value)
    if filled < size {
        print("| \(size) | fill stopped after \(Int(fillLimit)) s at \(filled) entries (\(Int(Double(filled) / fillSeconds))/s): size skipped | | | | | |")
        await store.close()
        _ = try await PostgresSecretStore.destroy(configuration: configuration, options: options)
        continue
    }
    print("| \(size) | fill (`put(contentsOf:)`, \(batchSize) a transaction) | 1 | \(String(format: "%.2f s", fillSeconds)) total | | \(Int(Double(size) / fillSeconds)) entries/s | |")
    let rowBytes = try await storeRowBytes(floorClient)
    if churnPuts > 0 {
        let churnStarted = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<32 {
                group.addTask {
                    for _ in stride(from: worker, to: churnPuts, by: 32) {
                        try await store.put(NewEntry(name: "entry-\(Int.random(in: 0..<size))", secret: value))
                    }
                }
            }
            try await group.waitForAll()
        }
        print("| \(size) | churn: \(churnPuts) puts after the fill's VACUUM | 32 | \(String(format: "%.2f s", seconds(ContinuousClock.now - churnStarted))) total | | | |")
    }
    let floorKeys = try await makeFloorTable(floorClient, count: size, rowBytes: rowBytes)
    let floorVault = ByteBuffer(bytes: [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff])
    let floorSealed = ByteBuffer(bytes: try SecureRandom.bytes(count: max(16, rowBytes - 100)))
    let readKeys = try await storeReadKeys(floorClient, storeName: configuration.storeName)
    if let first = readKeys.first, !onlyGet { try await makePutCopies(floorClient, vaultID: first.0) }
    let session = "bench-session"
    let floorGeneration = Counter()

    let operationsInOrder: [(name: String, run: @Sendable () async throws -> Void)] = [
        ("floor: bare `SELECT`", { @Sendable in
            for try await _ in try await floorClient.execute(BareSelect(vaultID: floorVault, lookup: floorKeys[Int.random(in: 0..<floorKeys.count)])) {}
        }),
        ("the statement of `secret(named:)` alone", { @Sendable in
            guard !readKeys.isEmpty else { return }
            let (vault, lookup, bucket) = readKeys[Int.random(in: 0..<readKeys.count)]
            for try await _ in try await floorClient.execute(StoreRead(vaultID: vault, lookup: lookup, bucket: bucket)) {}
        }),
        ("`secret(named:)`", { @Sendable in _ = try await store.secret(named: "entry-\(Int.random(in: 0..<size))") }),
        ("floor: bare upsert transaction", { @Sendable in
            let generation = Int64(floorGeneration.next())
            try await floorClient.withTransaction(logger: quietLogger) { connection in
                _ = try await connection.execute(BareUpsert(vaultID: floorVault, lookup: floorKeys[Int.random(in: 0..<floorKeys.count)],
                                                            generation: generation, sealed: floorSealed), logger: quietLogger)
            }
        }),
        ("the statements of `put` alone", { @Sendable in
            guard !readKeys.isEmpty else { return }
            let (vault, lookup, bucket) = readKeys[Int.random(in: 0..<readKeys.count)]
            try await putStatements(floorClient, vaultID: vault, lookup: lookup, bucket: bucket, logger: quietLogger)
        }),
        ("the statements of `put` merged", { @Sendable in
            guard !readKeys.isEmpty else { return }
            let (vault, lookup, bucket) = readKeys[Int.random(in: 0..<readKeys.count)]
            try await mergedPutStatements(floorClient, vaultID: vault, lookup: lookup, bucket: bucket, logger: quietLogger)
        }),
        ("the statements of `put` merged and prepared", { @Sendable in
            guard !readKeys.isEmpty else { return }
            let (vault, lookup, bucket) = readKeys[Int.random(in: 0..<readKeys.count)]
            try await preparedPutStatements(floorClient, vaultID: vault, lookup: lookup, bucket: bucket, logger: quietLogger)
        }),
        ("`put`", { @Sendable in try await store.put(NewEntry(name: "entry-\(Int.random(in: 0..<size))", secret: value)) }),
    ].filter { (!onlyGet || $0.name.contains("SELECT") || $0.name.contains("secret"))
        && (!onlyPut || $0.name == "floor: bare upsert transaction" || $0.name == "`put`") && (!readKeys.isEmpty || !($0.name.contains("alone") || $0.name.contains("merged"))) }

    for clients in clientCounts {
        var collected: [String: [Figures]] = [:]
        var maxRefreshes = 0
        // Warm-up, untimed: every operation at this concurrency for a moment, so that each pool
        // has opened its connections (and prepared its statements on them) before any figure is
        // taken. Without it the first round of 32 clients measured the pools growing: the store's,
        // new for each size, from 8 connections to 32, each preparing the read (p99 49 ms).
        for operation in operationsInOrder {
            FileHandle.standardError.write(Data("warming up \(operation.name), \(size) entries, \(clients) clients\n".utf8))
            _ = try await measure(clients: clients, operations: clients * 20, seconds: 0.5, operation.run)
        }
        for round in 0..<rounds {
            // The round's measurement of each operation is taken in `slices` parts, every operation's
            // part in turn, so that a floor and the library's operation beside it see the same
            // moments of the machine (on 2 cores the bare SELECT alone moved 1.9 to 3.1 ms at 32
            // clients between measurements 6 s apart).
            let before = try await backgroundWork(floorClient)
            var samples: [String: [Sample]] = [:]
            for slice in 0..<slices {
                for operation in operationsInOrder {
                    // Progress on standard error (a profiler can start on it): the tables go to standard output.
                    if slice == 0 {
                        FileHandle.standardError.write(Data("measuring \(operation.name), \(size) entries, \(clients) clients\n".utf8))
                    }
                    samples[operation.name, default: []].append(
                        try await sample(clients: clients, operations: max(1, operations / slices),
                                         seconds: secondsPerMeasurement / Double(slices), operation.run))
                }
            }
            let after = try await backgroundWork(floorClient)
            for operation in operationsInOrder {
                let figures = figures(samples[operation.name] ?? [])
                collected[operation.name, default: []].append(figures)
                // Each round's figure, and the server's background work that overlapped the round (a
                // checkpoint, an autovacuum worker): on 2 cores either moves a figure by half.
                FileHandle.standardError.write(Data("  round \(round + 1): \(operation.name), \(size) entries, \(clients) clients: p50 \(ms(figures.p50)), p99 \(ms(figures.p99)), \(Int(figures.perSecond))/s; \(before.describe(until: after))\n".utf8))
            }
            if !onlyGet, !onlyPut {
                let (figures, perRound, _) = try await measureRefresh(store: store, clients: clients, session: session)
                collected["fleet refresh", default: []].append(figures)
                maxRefreshes = max(maxRefreshes, perRound)
            }
        }
        var medians: [String: Figures] = [:]
        for (name, list) in collected {
            medians[name] = Figures(p50: median(list.map(\.p50)), p99: median(list.map(\.p99)), perSecond: median(list.map(\.perSecond)),
                                    count: list.map(\.count).reduce(0, +))
        }
        results.append(Result(size: size, clients: clients, figures: medians, refreshesPerRound: maxRefreshes))
        func line(_ name: String, floor: String?, note: String = "") {
            guard let figures = medians[name] else { return }
            let versus = floor.flatMap { medians[$0] }.map { ratio(figures.p50 / $0.p50) } ?? ""
            print("| \(size) | \(name)\(note) | \(clients) | \(ms(figures.p50)) | \(ms(figures.p99)) | \(Int(figures.perSecond)) | \(versus) |")
        }
        line("floor: bare `SELECT`", floor: nil)
        line("the statement of `secret(named:)` alone", floor: "floor: bare `SELECT`", note: " (prepared, no library)")
        line("`secret(named:)`", floor: "floor: bare `SELECT`")
        line("floor: bare upsert transaction", floor: nil)
        line("the statements of `put` alone", floor: "floor: bare upsert transaction", note: " (unprepared, no library)")
        line("the statements of `put` merged", floor: "floor: bare upsert transaction", note: " (4 round trips, not 6; a proposal)")
        line("the statements of `put` merged and prepared", floor: "floor: bare upsert transaction", note: " (a proposal)")
        line("`put`", floor: "floor: bare upsert transaction")
        line("fleet refresh", floor: nil, note: " (at most \(maxRefreshes) refresh per expiry round)")
    }
    await store.close()
    _ = try await PostgresSecretStore.destroy(configuration: configuration, options: options)
}
_ = try await floorClient.query("DROP TABLE IF EXISTS vault_bench_floor, vault_bench_buckets, vault_bench_entries").collect()
floorRunner.cancel()
await floorRunner.value

// MARK: - Ratios and the issue's targets

let finished = results
let figure: (Int, Int, String) -> Figures? = { size, clients, name in
    finished.first { $0.size == size && $0.clients == clients }?.figures[name]
}
let smallest = sizes.min() ?? 100
/// (put / upsert at `size`) ÷ (put / upsert at the smallest size), p50, for `clients`.
let normalizedPutGrowth: (Int, Int) -> Double? = { size, clients in
    guard let put = figure(size, clients, "`put`"), let upsert = figure(size, clients, "floor: bare upsert transaction"),
          let basePut = figure(smallest, clients, "`put`"), let baseUpsert = figure(smallest, clients, "floor: bare upsert transaction") else { return nil }
    return (put.p50 / upsert.p50) / (basePut.p50 / baseUpsert.p50)
}
if !onlyGet {
    print()
    // put@N / put@smallest, and the same over the upsert floor measured beside each: the disk's fsync
    // time moves with other work on the machine between the sizes' phases, and the floor moves with it.
    print("| entries | clients | put / upsert (p50) | put / upsert (operations/s) | get / select (p50) | put@N / put@\(smallest) (p50) | the same, each over its upsert | refreshes per expiry round |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for result in results {
        let put = result.figures["`put`"], upsert = result.figures["floor: bare upsert transaction"]
        let get = result.figures["`secret(named:)`"], select = result.figures["floor: bare `SELECT`"]
        let base = figure(smallest, result.clients, "`put`")
        print("| \(result.size) | \(result.clients) | \(put.flatMap { p in upsert.map { ratio(p.p50 / $0.p50) } } ?? "") "
              + "| \(put.flatMap { p in upsert.map { ratio(p.perSecond / $0.perSecond) } } ?? "") "
              + "| \(get.flatMap { g in select.map { ratio(g.p50 / $0.p50) } } ?? "") "
              + "| \(put.flatMap { p in base.map { ratio(p.p50 / $0.p50) } } ?? "") "
              + "| \(normalizedPutGrowth(result.size, result.clients).map(ratio) ?? "") | \(result.refreshesPerRound) |")
    }
    if let largest = sizes.max(), results.contains(where: { $0.size == largest }) {
        print()
        print("Targets at \(largest) entries (issue 38):")
        func target(_ text: String, _ value: Double?, _ met: (Double) -> Bool) {
            guard let value else { print("- \(text): not measured"); return }
            print("- \(text): \(ratio(value)) — \(met(value) ? "met" : "MISSED")")
        }
        let one = clientCounts.min() ?? 1, most = clientCounts.max() ?? 32
        target("put p50 at 1 client ≤ 1.2× put p50 at \(smallest)",
               figure(largest, one, "`put`").flatMap { p in figure(smallest, one, "`put`").map { p.p50 / $0.p50 } }, { $0 <= 1.2 })
        target("the same, each over the bare upsert measured beside it (the disk's fsync time moves between phases)",
               normalizedPutGrowth(largest, one), { $0 <= 1.2 })
        target("put p50 at 1 client ≤ 2× bare upsert",
               figure(largest, one, "`put`").flatMap { p in figure(largest, one, "floor: bare upsert transaction").map { p.p50 / $0.p50 } }, { $0 <= 2 })
        target("put throughput at \(most) clients ≥ 0.5× bare upsert's",
               figure(largest, most, "`put`").flatMap { p in figure(largest, most, "floor: bare upsert transaction").map { p.perSecond / $0.perSecond } },
               { $0 >= 0.5 })
        for clients in clientCounts {
            target("secret(named:) p50 at \(clients) clients ≤ 1.5× bare SELECT",
                   figure(largest, clients, "`secret(named:)`").flatMap { g in figure(largest, clients, "floor: bare `SELECT`").map { g.p50 / $0.p50 } },
                   { $0 <= 1.5 })
        }
        if onlyPut {
            print("- fleet refresh: exactly one refresh per expiry round at every size and client count: not measured")
        } else {
            let refreshOK = results.allSatisfy { $0.refreshesPerRound == 1 }
            print("- fleet refresh: exactly one refresh per expiry round at every size and client count — \(refreshOK ? "met" : "MISSED")")
        }
    }
}
