import Foundation
import Testing
@testable import CredentialVault
@testable import VaultCLI

@Suite struct EntryListJSONTests {
    @Test func streamingRendererMatchesTheGenericSerializerByteForByte() throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let entries = [
            EntryMetadata(name: "plain", owner: "", kind: .accessToken, label: nil, createdAt: now, updatedAt: now,
                          expiresAt: now.addingTimeInterval(-5), transferable: true, secretByteCount: 40),
            EntryMetadata(name: "quote\"back\\slash\ttab", owner: "user:u1", kind: .generic, label: "é 🔑 \u{1}",
                          createdAt: Date(timeIntervalSince1970: 1_700_000_000.123), updatedAt: now,
                          expiresAt: nil, transferable: false, secretByteCount: 0),
            EntryMetadata(name: "attributes", owner: "", kind: .password, label: nil, createdAt: now, updatedAt: now,
                          expiresAt: nil, transferable: true, secretByteCount: 2,
                          attributes: ["xdg:schema": "org.git.Password", "é": "\"q\" \u{1}", "Z": "", "a": "1"]),
        ]
        let generic = try JSONValue.array(entries.map { $0.jsonValue(now: now) }).serialized(prettyPrinted: true)
        #expect(EntryListJSON.render(entries, now: now) == generic)
        #expect(EntryListJSON.render([], now: now) == (try JSONValue.array([]).serialized(prettyPrinted: true)))
    }
}

/// `verify --json` prints a generation above 2^53 exactly.
@Suite struct VerifyJSONGenerationTests {
    @Test func generationAbove2To53IsExact() throws {
        let report = VerificationReport(vaultID: "00", generation: (1 << 53) + 1, entriesChecked: 0, failures: [])
        let text = String(decoding: try report.jsonValue.serialized(), as: UTF8.self)
        #expect(text.contains(#""generation":9007199254740993"#), "\(text)")
        let huge = VerificationReport(vaultID: "00", generation: UInt64.max, entriesChecked: 0, failures: [])
        #expect(String(decoding: try huge.jsonValue.serialized(), as: UTF8.self).contains(#""generation":18446744073709551615"#))
    }
}
