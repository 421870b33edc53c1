import Foundation
import Testing

/// Tests that bound how long something takes by the wall clock. A loaded machine makes any such
/// bound a gamble when hundreds of tests share the process, so `scripts/test` runs them in a
/// process of their own, after the rest, one at a time (`VAULT_TIMING_TESTS`):
/// - unset (a plain `swift test`): they run with everything else;
/// - `apart`: they are skipped here (the main run of `scripts/test`);
/// - `only`: the run `scripts/test` makes for them (`--filter` on the `Timed` suites).
package enum TimingTests {
    /// `VAULT_TIMING_TESTS`.
    package static let mode = ProcessInfo.processInfo.environment["VAULT_TIMING_TESTS"]
    /// Whether this process runs them.
    package static var runHere: Bool { mode != "apart" }
}

extension Trait where Self == ConditionTrait {
    /// A suite of wall-clock assertions: by convention a nested `@Suite(.timing, .serialized) struct Timed`,
    /// which `scripts/test` selects with `--filter /Timed/` and runs in a process of its own.
    package static var timing: Self {
        .enabled(if: TimingTests.runHere, "a wall-clock test: scripts/test runs it in a process of its own (VAULT_TIMING_TESTS)")
    }
}
