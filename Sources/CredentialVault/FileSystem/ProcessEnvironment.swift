#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads named environment variables with `getenv`. `ProcessInfo.processInfo.environment` builds
/// a dictionary of the whole environment on every call (about 0.8 M instructions over the three
/// calls of a `vault get` with 35 variables, docs/BENCHMARKS.md), where the path defaults need
/// two or three variables.
@usableFromInline
enum ProcessEnvironment {
    /// The variables among `names` that are set (possibly empty), as a dictionary.
    @usableFromInline
    static func values(_ names: String...) -> [String: String] {
        var values: [String: String] = [:]
        for name in names {
            if let value = getenv(name) { values[name] = String(cString: value) }
        }
        return values
    }
}
