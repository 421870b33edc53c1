import Foundation

/// Bounded retries of transient failures: exponential backoff with full jitter, and the
/// server's `Retry-After` honoured when it is not longer than `maximumRetryAfter`.
///
/// A refresh is retried only when the server surely did not act on it (the connection was
/// refused, or it answered 5xx/429): after a timeout or an unreadable 200 the server may have
/// rotated the refresh token already, and presenting the old one again would make a
/// reuse-protecting server revoke the whole session.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (at least 1).
    public var maximumAttempts: Int
    /// The backoff before the second attempt; doubled before each further one.
    public var baseDelay: Duration
    /// No backoff is longer than this.
    public var maximumDelay: Duration
    /// A `Retry-After` longer than this is not waited for: the error is reported at once.
    public var maximumRetryAfter: Duration

    /// Defaults: 3 attempts, 0.5 s base, 8 s cap, Retry-After up to 30 s.
    public init(maximumAttempts: Int = 3, baseDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(8),
                maximumRetryAfter: Duration = .seconds(30)) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// No retries.
    public static let never = RetryPolicy(maximumAttempts: 1)

    /// The wait before attempt `attempt + 1` (attempt counts from 1): the server's
    /// `Retry-After` when given, else a random delay in [0, min(cap, base·2^(attempt-1))].
    func delay(afterAttempt attempt: Int, retryAfter: Duration?) -> Duration {
        if let retryAfter { return min(retryAfter, maximumRetryAfter) }
        let exponent = min(attempt - 1, 30)
        let ceiling = min(maximumDelay, baseDelay * (1 << exponent))
        let milliseconds = max(0, Int(Self.seconds(ceiling) * 1000))
        return .milliseconds(Int.random(in: 0...milliseconds))
    }

    /// Parses `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
    static func retryAfter(_ value: String?, now: Date = Date()) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int(value), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .milliseconds(max(0, Int(date.timeIntervalSince(now) * 1000)))
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
