import Foundation
import Testing
@testable import CredentialVault

@Suite("JSONValue")
struct JSONValueTests {
    private func parse(_ text: String) throws -> JSONValue {
        try JSONValue(parsing: Array(text.utf8))
    }

    private func text(_ value: JSONValue, pretty: Bool = false) throws -> String {
        String(decoding: try value.serialized(prettyPrinted: pretty), as: UTF8.self)
    }

    /// The syntax error for `text`, or nil when it parses.
    private func syntaxError(_ text: String) -> JSONSyntaxError? {
        do {
            _ = try JSONParser.parse(Array(text.utf8))
            return nil
        } catch {
            return error
        }
    }

    @Test func parsesEveryKind() throws {
        let value = try parse(#"{"n": null, "t": true, "f": false, "i": -12, "d": 0.5, "s": "x", "a": [1, "2"], "o": {}}"#)
        #expect(value["n"] == .null)
        #expect(value["t"]?.boolValue == true)
        #expect(value["f"]?.boolValue == false)
        #expect(value["i"]?.intValue == -12)
        #expect(value["d"]?.doubleValue == 0.5)
        #expect(value["d"]?.intValue == nil)
        #expect(value["s"]?.stringValue == "x")
        #expect(value["a"]?[1]?.stringValue == "2")
        #expect(value["a"]?[2] == nil)
        #expect(value["o"]?.objectValue == [:])
        #expect(value["missing"] == nil)
    }

    @Test func integersAreWrittenWithoutFractionOrExponent() throws {
        #expect(try text(1_700_000_000) == "1700000000")
        #expect(try text(-42) == "-42")
        #expect(try text(9_007_199_254_740_992) == "9007199254740992")
        #expect(try text(0.1) == "0.1")
        #expect(try text(1.5) == "1.5")
        #expect(try parse(try text(1e300)) == .number(1e300))
    }

    @Test func codableKeepsIntegersAndKinds() throws {
        let value: JSONValue = ["exp": 1_700_000_000, "flag": true, "one": 1, "list": [nil, "s"]]
        let encoded = String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
        #expect(encoded.contains("1700000000"))
        #expect(!encoded.contains("e+"))
        let decoded = try JSONDecoder().decode(JSONValue.self, from: Data(encoded.utf8))
        #expect(decoded == value)
        // true stays a Boolean and 1 stays a number through JSONDecoder.
        #expect(decoded["flag"] == .bool(true))
        #expect(decoded["one"] == .number(1))
    }

    @Test func serializationSortsKeysAndRoundTrips() throws {
        let value: JSONValue = ["b": [1, 2], "a": ["z": "quote\" backslash\\ newline\n tab\t nul\u{0}"], "é": "ü"]
        #expect(try text(value) == #"{"a":{"z":"quote\" backslash\\ newline\n tab\t nul\u0000"},"b":[1,2],"é":"ü"}"#)
        #expect(try parse(try text(value)) == value)
        #expect(try parse(try text(value, pretty: true)) == value)
        #expect(try text(["k": [1, [:]]], pretty: true) == "{\n  \"k\": [\n    1,\n    {}\n  ]\n}")
    }

    @Test func serializationRefusesNonFiniteNumbers() {
        #expect(throws: VaultError.self) { try JSONValue.number(.nan).serialized() }
        #expect(throws: VaultError.self) { try JSONValue.array([.number(.infinity)]).serialized() }
    }

    @Test func unicodeEscapesIncludingSurrogatePairs() throws {
        #expect(try parse(#""\u00e9\ud83d\ude00\/""#) == .string("é😀/"))
        #expect(syntaxError(#""\ud83d""#)?.reason.contains("surrogate") == true)
        #expect(syntaxError(#""\ude00x""#)?.reason.contains("surrogate") == true)
        #expect(syntaxError(#""\u12G4""#) != nil)
    }

    @Test func rejectsWhatRFC8259Forbids() {
        let cases = [
            "", " ", "[1,]", #"{"a":1,}"#, #"{"a":1,"a":2}"#, "01", "-", "1.", ".5", "1e", "+1",
            "[1 2]", "{'a':1}", "tru", "nul", "NaN", "Infinity", "1e400", "\"tab\tinside\"",
            "\"unterminated", "[", #"{"a" 1}"#, "1 2", "/* comment */ 1", #""\x""#,
        ]
        for text in cases {
            #expect(syntaxError(text) != nil, "should reject \(text.debugDescription)")
        }
    }

    @Test func rejectsInvalidUTF8() {
        #expect(throws: VaultError.self) { try JSONValue(parsing: [0x22, 0xFF, 0xFE, 0x22]) }
        #expect(throws: VaultError.self) { try JSONValue(parsing: [0x22, 0xC3, 0x22]) }
    }

    @Test func acceptsLeadingByteOrderMarkAndWhitespace() throws {
        #expect(try JSONValue(parsing: [0xEF, 0xBB, 0xBF] + Array(" \r\n\t[true] \n".utf8)) == [true])
    }

    @Test func syntaxErrorsGiveLineAndColumn() throws {
        let error = try #require(syntaxError("{\n  \"a\": 1,\n  \"b\": }"))
        #expect(error.line == 3)
        #expect(error.column == 8)
        #expect(error.description.contains("line 3, column 8"))
        let duplicate = try #require(syntaxError("{\"k\": 1,\n\"k\": 2}"))
        #expect(duplicate.reason.contains("duplicate key \"k\""))
        #expect(duplicate.line == 2)
    }

    @Test func errorMessagesDoNotQuoteTheInput() {
        let secret = "s3cr3t-value-that-must-not-leak"
        for text in ["{\"a\": \"\(secret)\" x}", "[\"\(secret)\u{1}\"]", "{\"a\": \(secret)}"] {
            let message = (syntaxError(text)?.description ?? "")
            #expect(!message.isEmpty)
            #expect(!message.contains(secret))
        }
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(syntaxError(deep)?.reason.contains("nested") == true)
        let fine = String(repeating: "[", count: JSONParser.maximumDepth) + String(repeating: "]", count: JSONParser.maximumDepth)
        #expect(syntaxError(fine) == nil)
    }

    @Test func iso8601TimestampsRoundTripMilliseconds() throws {
        let date = Date(timeIntervalSince1970: 1_700_000_000.123)
        let text = try #require(ISO8601Timestamp.string(from: date))
        #expect(text == "2023-11-14T22:13:20.123Z")
        #expect(ISO8601Timestamp.date(from: text) == date)
        #expect(ISO8601Timestamp.string(from: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(ISO8601Timestamp.string(from: Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59.000Z")
        #expect(ISO8601Timestamp.string(from: Date(timeIntervalSince1970: 951_782_400)) == "2000-02-29T00:00:00.000Z")
        #expect(ISO8601Timestamp.date(from: "2023-11-14T23:13:20+01:00") == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(ISO8601Timestamp.date(from: "2023-11-14T22:13:20.5Z") == Date(timeIntervalSince1970: 1_700_000_000.5))
        #expect(ISO8601Timestamp.date(from: "2023-02-29T00:00:00Z") == nil)
        #expect(ISO8601Timestamp.date(from: "2023-11-14") == nil)
        #expect(ISO8601Timestamp.date(from: "2023-11-14T22:13:20") == nil)
        #expect(ISO8601Timestamp.string(from: Date(timeIntervalSince1970: 1e12)) == nil)
    }

    /// What the CLI prints and the agent sends: never nil, clamped to years 1–9999.
    @Test func clampedTimestampsStayWithinFourDigitYears() {
        #expect(ISO8601Timestamp.clampedString(from: Date(timeIntervalSince1970: 1_700_000_000.123)) == "2023-11-14T22:13:20.123Z")
        #expect(ISO8601Timestamp.clampedString(from: Date(timeIntervalSince1970: 1e13)) == "9999-12-31T23:59:59.999Z")
        #expect(ISO8601Timestamp.clampedString(from: Date(timeIntervalSince1970: -1e15)) == "0001-01-01T00:00:00.000Z")
        #expect(ISO8601Timestamp.clampedString(from: Date(timeIntervalSince1970: .infinity)) == "9999-12-31T23:59:59.999Z")
        #expect(ISO8601Timestamp.clampedString(from: Date(timeIntervalSince1970: .nan)) == "1970-01-01T00:00:00.000Z")
    }
}

/// Integers above 2^53 in JSON output are written exactly (`.integer`).
@Suite struct ExactIntegerJSONTests {
    @Test func largeIntegersAreWrittenDigitForDigit() throws {
        let values: [(JSONValue, String)] = [
            (.integer(Int128(UInt64.max)), "18446744073709551615"),
            (.integer(9_007_199_254_740_993), "9007199254740993"),
            (.integer(-9_007_199_254_740_993), "-9007199254740993"),
            (.integer(0), "0"),
        ]
        for (value, text) in values {
            #expect(String(decoding: try value.serialized(), as: UTF8.self) == text)
            let encoded = try JSONEncoder().encode(value)
            #expect(String(decoding: encoded, as: UTF8.self) == text)
        }
        // A Double cannot: this is why the case exists.
        #expect(String(decoding: try JSONValue.number(9_007_199_254_740_993).serialized(), as: UTF8.self) != "9007199254740993")
        #expect(JSONValue.integer(42).intValue == 42)
        #expect(JSONValue.integer(42).doubleValue == 42)
    }
}
