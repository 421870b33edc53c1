import Foundation
import Testing
@testable import VaultCLI

/// How the entry-name completion reads the command line it is handed (verbatim shell words).
@Suite struct EntryNameCompletionTests {
    @Test func optionValuesAreFoundInBothSpellingsAndTheLastWins() {
        let words = ["vault", "get", "--vault", "/a", "--key-file=/k1", "--vault", "'/b c'", "--key-file", "~/k2", "na"]
        #expect(EntryNameCompletion.value(of: "--vault", in: words, before: 9) == "/b c")
        let home = ProcessInfo.processInfo.environment["HOME"] ?? ""
        #expect(EntryNameCompletion.value(of: "--key-file", in: words, before: 9) == home + "/k2")
        // Only words before the one being completed count; an option without its value is none.
        #expect(EntryNameCompletion.value(of: "--key-file", in: words, before: 6) == "/k1")
        #expect(EntryNameCompletion.value(of: "--vault", in: ["vault", "get", "--vault"], before: 3) == nil)
        #expect(EntryNameCompletion.value(of: "--passphrase-file", in: words, before: 9) == nil)
    }

    @Test func quotesAndEscapesAreRemoved() {
        #expect(EntryNameCompletion.unquoted("\"my token\"") == "my token")
        #expect(EntryNameCompletion.unquoted("'half") == "half")
        #expect(EntryNameCompletion.unquoted("my\\ token") == "my token")
        #expect(EntryNameCompletion.unquoted("plain") == "plain")
    }

    @Test func withoutAnyQuietKeySourceNothingIsOpened() {
        // No vault at the path and no key on the line: nothing, and no prompt (there is no terminal to ask on here anyway).
        let candidates = EntryNameCompletion.candidates(["vault", "get", "--vault", "/nonexistent-\(UUID().uuidString)", ""], 4, "")
        #expect(candidates.isEmpty)
    }
}
