import Foundation
import Testing
@testable import VaultCLI

/// How the entry-name completion reads the command line it is handed (verbatim shell words).
@Suite struct EntryNameCompletionTests {
    @Test func optionValuesAreFoundInBothSpellingsAndTheLastWins() {
        let words = ["vault", "get", "--vault", "/a", "--key-file=/k1", "--vault", "'/b c'", "--key-file", "~/k2", "na"]
        // `~/` is expanded with the environment's HOME (the one handed in, not the test process's).
        let environment = CommandEnvironment([.home: "/home/someone"])
        #expect(EntryNameCompletion.value(of: "--vault", in: words, before: 9, environment: environment) == "/b c")
        #expect(EntryNameCompletion.value(of: "--key-file", in: words, before: 9, environment: environment) == "/home/someone/k2")
        // Only words before the one being completed count; an option without its value is none.
        #expect(EntryNameCompletion.value(of: "--key-file", in: words, before: 6, environment: environment) == "/k1")
        #expect(EntryNameCompletion.value(of: "--vault", in: ["vault", "get", "--vault"], before: 3, environment: environment) == nil)
        #expect(EntryNameCompletion.value(of: "--passphrase-file", in: words, before: 9, environment: environment) == nil)
    }

    @Test func quotesAndEscapesAreRemoved() {
        #expect(EntryNameCompletion.unquoted("\"my token\"") == "my token")
        #expect(EntryNameCompletion.unquoted("'half") == "half")
        #expect(EntryNameCompletion.unquoted("my\\ token") == "my token")
        #expect(EntryNameCompletion.unquoted("plain") == "plain")
    }

    @Test func withoutAnyQuietKeySourceNothingIsOpened() {
        // No vault at the path and no key on the line: nothing, and no prompt (there is no terminal to ask on here anyway).
        let candidates = EntryNameCompletion.candidates(["vault", "get", "--vault", "/nonexistent-\(UUID().uuidString)", ""], 4, "",
                                                        environment: CommandEnvironment(), includingSession: true)
        #expect(candidates.isEmpty)
    }
}
