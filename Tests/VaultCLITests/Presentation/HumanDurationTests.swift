import Foundation
import Testing
@testable import CredentialVault
@testable import VaultCLI

/// `HumanDuration`: "90s", "1h30m", "7d" in; "12 min", "3 h" out.
@Suite struct HumanDurationTests {
    @Test(arguments: [
        ("90s", 90), ("15m", 900), ("1h", 3600), ("7d", 604_800), ("1h30m", 5400), ("2w", 1_209_600),
        ("0s", 0), ("1d2h3m4s", 93_784), ("30m1h", 5400),
    ] as [(String, Int64)])
    func parsesUnitsAndSums(text: String, seconds: Int64) throws {
        #expect(try HumanDuration.seconds(in: text) == seconds)
    }

    @Test(arguments: ["", "90", "h", "1x", "1H", "1h1h", "-5m", "1.5h", " 1h", "1h ", "٣s", "9999999999999s", "36601d"])
    func rejectsMalformedDurations(text: String) {
        #expect { try HumanDuration.seconds(in: text) } throws: { ($0 as? VaultError)?.code == .invalidInput }
    }

    @Test func messageNamesTheTextAndSuggestsAFix() {
        let error = #expect(throws: VaultError.self) { try HumanDuration.seconds(in: "90") }
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains("'90'") == true)
        #expect(error?.fix?.contains("1h30m") == true)
    }

    @Test(arguments: [
        (0, "0 s"), (59.9, "59 s"), (60, "1 min"), (754, "12 min"), (3600, "1 h"), (5400, "1 h 30 min"),
        (3 * 3600 + 59, "3 h"), (86_400, "1 d"), (2 * 86_400 + 5 * 3600 + 30, "2 d 5 h"), (-754, "12 min"),
    ] as [(Double, String)])
    func describesInTheLargestUnits(seconds: Double, text: String) {
        #expect(HumanDuration.describe(seconds: seconds) == text)
    }
}

/// `ExpiryStatus`: "expires in 12 min", "expired 3 h ago", "no expiry".
@Suite struct ExpiryStatusTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func describesFutureAndPastAndMissingExpiry() {
        #expect(ExpiryStatus(expiresAt: nil, now: now).description == "no expiry")
        #expect(ExpiryStatus(expiresAt: now.addingTimeInterval(12 * 60 + 5), now: now).description == "expires in 12 min")
        #expect(ExpiryStatus(expiresAt: now.addingTimeInterval(-3 * 3600), now: now).description == "expired 3 h ago")
        #expect(ExpiryStatus(expiresAt: now, now: now).description == "expired just now")
    }

    @Test func expiryAtExactlyNowCountsAsExpiredLikeEntryMetadata() {
        let metadata = entry(expiresAt: now)
        #expect(metadata.isExpired(at: now))
        #expect(metadata.expiryStatus(at: now).isExpired)
        #expect(!entry(expiresAt: now.addingTimeInterval(1)).expiryStatus(at: now).isExpired)
    }

    @Test func expiringWithinIncludesExpiredAndExcludesNoExpiry() {
        #expect(entry(expiresAt: now.addingTimeInterval(-10)).expires(within: 60, of: now))
        #expect(entry(expiresAt: now.addingTimeInterval(60)).expires(within: 60, of: now))
        #expect(!entry(expiresAt: now.addingTimeInterval(61)).expires(within: 60, of: now))
        #expect(!entry(expiresAt: nil).expires(within: 1e9, of: now))
    }

    func entry(expiresAt: Date?) -> EntryMetadata {
        EntryMetadata(name: "n", owner: "", kind: .generic, label: nil, createdAt: now, updatedAt: now,
                      expiresAt: expiresAt, transferable: true, secretByteCount: 1)
    }
}
