// Latency and throughput of the PostgreSQL store through the library, next to its floor: a
// bare single-row SELECT of a bytea through postgres-nio on a pool of the same size.
// Run by scripts/bench-postgres (which starts a real PostgreSQL); not a product.
//
//   VaultPostgresBench URL [OPERATIONS_PER_RUN] [CLIENTS...]     (default 2000; 1 8 32)
//
// Prints a Markdown table: p50, p99 and operations per second for each operation and
// number of concurrent clients. Never prints a secret.
import CredentialVault
import CredentialVaultPostgres
import Foundation
import Logging
import NIOCore
import PostgresNIO
import VaultCrypto

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: VaultPostgresBench URL [OPERATIONS] [CLIENTS...]\n".utf8))
    exit(64)
}
let url = arguments[1]
let operations = arguments.count > 2 ? Int(arguments[2]) ?? 2000 : 2000
let clientCounts = arguments.count > 3 ? arguments[3...].compactMap { Int($0) } : [1, 8, 32]
/// How many entries the store holds while it is measured ($VAULT_BENCH_ENTRIES, default 100):
/// `secret(named:)` checks the row against the sealed state, which lists every row.
let entryCount = max(1, Int(ProcessInfo.processInfo.environment["VAULT_BENCH_ENTRIES"] ?? "") ?? 100)
/// `VAULT_BENCH_ONLY=get` measures the floor and `secret(named:)` alone (for a profiler).
let onlyGet = ProcessInfo.processInfo.environment["VAULT_BENCH_ONLY"] == "get"

struct Figures {
    var p50: Duration
    var p99: Duration
    var perSecond: Double
}

/// Runs `operations` calls of `body` spread over `clients` concurrent tasks.
func measure(clients: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws -> Figures {
    let clock = ContinuousClock()
    let started = clock.now
    let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
        for client in 0..<clients {
            group.addTask {
                var mine: [Duration] = []
                var index = client
                while index < operations {
                    let begin = clock.now
                    try await body(index)
                    mine.append(clock.now - begin)
                    index += clients
                }
                return mine
            }
        }
        var all: [Duration] = []
        for try await part in group { all += part }
        return all.sorted()
    }
    let elapsed = clock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Figures(p50: latencies[latencies.count / 2], p99: latencies[min(latencies.count - 1, latencies.count * 99 / 100)],
                   perSecond: Double(latencies.count) / seconds)
}


let pool = max(clientCounts.max() ?? 8, 8)
var configuration = try PostgresStoreConfiguration(url: url, storeName: "bench-" + UUID().uuidString)
configuration.maximumConnections = pool
let key = VaultKey.keyMaterial(SecureBytes(copying: try SecureRandom.bytes(count: 32)))
let store = try await PostgresSecretStore.create(configuration: configuration, key: key,
                                                 options: PostgresSecretStore.Options(operationTimeout: .seconds(60)))
let value = SecureBytes(copying: try SecureRandom.bytes(count: 1024))
for index in 0..<entryCount { try await store.add(NewEntry(name: "entry-\(index)", secret: value)) }
print("Store with \(entryCount) entries.")
print()

// The floor: the same pool size, a bare SELECT of one bytea row by primary key.
var floorConfiguration = PostgresClient.Configuration(host: configuration.host, port: configuration.port,
                                                      username: configuration.username, password: nil,
                                                      database: configuration.database, tls: .disable)
floorConfiguration.options.maximumConnections = pool
let floorClient = PostgresClient(configuration: floorConfiguration, backgroundLogger: Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() }))
let floorRunner = Task { await floorClient.run() }
let rows = try await floorClient.query("SELECT vault_id, lookup FROM vault_entries LIMIT 100").collect()
var keys: [(ByteBuffer, ByteBuffer)] = []
for row in rows { keys.append(try row.decode((ByteBuffer, ByteBuffer).self)) }
let floorKeys = keys
// The query `secret(named:)` sends, alone (the row joined with its store's state, the state itself
// left out when the state row's xmin is the one the store last saw): what the server adds to the floor.
struct Missing: Error { let what: String }
struct EntryWithState: PostgresPreparedStatement {
    static let sql = """
        SELECT CASE WHEN s.xmin::text = $3 THEN NULL ELSE s.state END, s.xmin::text, e.row_generation, e.sealed
        FROM vault_stores s LEFT JOIN vault_entries e ON e.vault_id = s.vault_id AND e.lookup = $2 WHERE s.vault_id = $1
        """
    typealias Row = (ByteBuffer?, String, Int64?, ByteBuffer?)
    var vaultID: ByteBuffer, lookup: ByteBuffer, knownVersion: String
    // The values in order, collected by PostgresQuery's interpolation (its SQL text is unused).
    func makeBindings() throws -> PostgresBindings { ("\(vaultID)\(lookup)\(knownVersion)" as PostgresQuery).binds }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
struct BareRow: PostgresPreparedStatement {
    static let sql = "SELECT sealed FROM vault_entries WHERE vault_id = $1 AND lookup = $2"
    typealias Row = ByteBuffer
    var vaultID: ByteBuffer, lookup: ByteBuffer
    func makeBindings() throws -> PostgresBindings { ("\(vaultID)\(lookup)" as PostgresQuery).binds }
    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}
let storeVault = try await floorClient.query("SELECT vault_id FROM vault_stores WHERE store_name = \(configuration.storeName)")
    .collect().first?.decode(ByteBuffer.self) ?? { throw Missing(what: "the bench store's row") }()
let storeLookups = try await floorClient.query("SELECT lookup FROM vault_entries WHERE vault_id = \(storeVault) LIMIT 100").collect()
    .map { try $0.decode(ByteBuffer.self) }

/// Rounds per client count ($VAULT_BENCH_ROUNDS, default 5): every read is measured once per
/// round, in turn, and the table gives each figure's median over the rounds, so that a burst of
/// other work on the two cores lands on every operation alike instead of on one.
let rounds = max(1, Int(ProcessInfo.processInfo.environment["VAULT_BENCH_ROUNDS"] ?? "") ?? 5)

func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
func seconds(_ duration: Duration) -> Double { Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18 }

/// The reads, measured in this order in every round.
var reads: [(name: String, run: @Sendable (Int) async throws -> Void)] = [
    ("floor: bare `SELECT` of one bytea row", { index in
        let (vault, lookup) = floorKeys[index % floorKeys.count]
        _ = try await floorClient.query("SELECT sealed FROM vault_entries WHERE vault_id = \(vault) AND lookup = \(lookup)").collect()
    }),
]
if !onlyGet {
    // The query `secret(named:)` sends, without the library: what the server adds to the floor.
    let rowVersion = try await floorClient.query("SELECT xmin::text FROM vault_stores WHERE vault_id = \(storeVault)")
        .collect().first?.decode(String.self) ?? { throw Missing(what: "the state row's xmin") }()
    reads.append(("the query of `secret(named:)`, unprepared", { index in
        _ = try await floorClient.query("""
            SELECT CASE WHEN s.xmin::text = \(rowVersion) THEN NULL ELSE s.state END, s.xmin::text,
                   e.row_generation, e.sealed FROM vault_stores s
            LEFT JOIN vault_entries e ON e.vault_id = s.vault_id AND e.lookup = \(storeLookups[index % storeLookups.count])
            WHERE s.vault_id = \(storeVault)
            """).collect()
    }))
    reads.append(("the query of `secret(named:)`, prepared", { index in
        for try await _ in try await floorClient.execute(EntryWithState(vaultID: storeVault, lookup: storeLookups[index % storeLookups.count],
                                                                        knownVersion: rowVersion)) {}
    }))
    reads.append(("the bare `SELECT`, prepared", { index in
        let (vault, lookup) = floorKeys[index % floorKeys.count]
        for try await _ in try await floorClient.execute(BareRow(vaultID: vault, lookup: lookup)) {}
    }))
}
reads.append(("`secret(named:)`", { index in _ = try await store.secret(named: "entry-\(index % entryCount)") }))

print("Reads: the median of \(rounds) rounds of \(operations) operations each; `put`: one run, after every read.")
print()
print("| operation | clients | p50 | p99 | operations/s | p50 × floor |")
print("|---|---:|---:|---:|---:|---:|")
func row(_ name: String, _ clients: Int, p50: Double, p99: Double, perSecond: Double, floor: Double) {
    print("| \(name) | \(clients) | \(String(format: "%.2f ms", p50 * 1000)) | \(String(format: "%.2f ms", p99 * 1000)) | \(Int(perSecond)) | \(String(format: "%.2f×", p50 / floor)) |")
}
var floors: [Int: Double] = [:]
for clients in clientCounts {
    var figures = Array(repeating: [Figures](), count: reads.count)
    for _ in 0..<rounds {
        for (slot, read) in reads.enumerated() { figures[slot].append(try await measure(clients: clients, read.run)) }
    }
    let floor = median(figures[0].map { seconds($0.p50) })
    floors[clients] = floor
    for (slot, read) in reads.enumerated() {
        row(read.name, clients, p50: median(figures[slot].map { seconds($0.p50) }), p99: median(figures[slot].map { seconds($0.p99) }),
            perSecond: median(figures[slot].map(\.perSecond)), floor: floor)
    }
}
if !onlyGet {
    // Writes last: each one makes a new version of the state row, which the reads above would otherwise meet.
    for clients in clientCounts {
        let put = try await measure(clients: clients) { index in
            try await store.put(NewEntry(name: "entry-\(index % entryCount)", secret: value))
        }
        row("`put` (one transaction)", clients, p50: seconds(put.p50), p99: seconds(put.p99), perSecond: put.perSecond,
            floor: floors[clients] ?? 1)
    }
}
floorRunner.cancel()
await floorRunner.value
await store.close()
