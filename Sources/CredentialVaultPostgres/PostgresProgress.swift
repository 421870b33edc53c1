import Synchronization

/// Counts the statements a long operation has had answered, so that its deadline applies to each
/// statement (each wait on the server) rather than to the whole: a bulk write of 100,000 entries
/// takes many statements, each answered well within the deadline, and is not a server that is
/// unavailable. `PostgresErrors.guarding(_:timeout:progress:watch:_:)` fails only when a whole
/// deadline passes without one more statement answered, and says which case it was.
final class PostgresProgress: Sendable {
    private let answered = Atomic<Int>(0)

    /// Records one statement answered (or one stretch of client work done between statements).
    func tick() { answered.add(1, ordering: .relaxed) }

    /// How many statements have been answered so far.
    var count: Int { answered.load(ordering: .relaxed) }
}
