import Foundation
import Testing
import TestScheduling

/// `vault generate` and `vault add --generate` against the built binary.
@Suite(.blockingWork) struct GenerateCommandTests {
    static let allCharacters = Set(##"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~"##)

    /// EFF's words, from the committed file.
    static func wordList() throws -> Set<String> {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/CredentialVault/Generation/Resources/eff_large_wordlist.txt")
        return Set(try String(contentsOf: file, encoding: .utf8).split(separator: "\n").map { String($0.split(separator: "\t")[1]) })
    }

    @Test func theDefaultIs24CharactersOfEveryClassAndNothingElse() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        var seen: Set<String> = []
        for _ in 0..<5 {
            let result = try sandbox.run(["generate"])
            #expect(result.status == 0)
            #expect(result.stderr.isEmpty)
            // Not a terminal: no line break after the secret.
            let text = result.stdoutText
            #expect(text.count == 24 && text.allSatisfy(Self.allCharacters.contains))
            #expect(text.contains(where: \.isLowercase) && text.contains(where: \.isUppercase) && text.contains(where: \.isNumber))
            seen.insert(text)
        }
        #expect(seen.count == 5)
    }

    @Test func lengthCharsetWordsAndSeparatorShapeTheSecret() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let digits = try sandbox.run(["generate", "--length", "40", "--charset", "digits"])
        #expect(digits.status == 0 && digits.stdoutText.count == 40 && digits.stdoutText.allSatisfy(\.isNumber))
        let two = try sandbox.run(["generate", "--length", "2", "--charset", "upper,symbols"]).stdoutText
        #expect(two.count == 2 && two.contains(where: \.isUppercase) && two.contains(where: { !$0.isLetter && !$0.isNumber }))
        let words = try Self.wordList()
        let phrase = try sandbox.run(["generate", "--words", "7"])
        #expect(phrase.status == 0)
        let parts = phrase.stdoutText.split(separator: "-")
        #expect(parts.count >= 7) // a few EFF words have a hyphen of their own
        let spaced = try sandbox.run(["generate", "--words", "5", "--separator", " "]).stdoutText.split(separator: " ").map(String.init)
        #expect(spaced.count == 5 && spaced.allSatisfy(words.contains))
    }

    @Test func badOptionsAreUsageErrors() throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let cases: [([String], String)] = [
            (["--length", "0"], "length"), (["--length", "1025"], "length"), (["--length", "99999999999999999999999"], "length"),
            (["--length", "3"], "character classes"), (["--charset", "lower,klingon"], "klingon"), (["--charset", ""], "empty"),
            (["--charset", "digits,digits"], "twice"), (["--words", "0"], "words"), (["--words", "257"], "words"),
            (["--words", "3", "--length", "9"], "--words"), (["--separator", "+"], "--separator"),
        ]
        for (arguments, mention) in cases {
            let result = try sandbox.run(["generate"] + arguments)
            #expect(result.status == 64, "\(arguments): \(result.stderrText)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderrText.contains(mention), "\(arguments): \(result.stderrText)")
        }
    }

    @Test func addGenerateStoresASecretOfTheShapeAskedAndPrintsNone() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let added = try sandbox.run(["add", "db", "--generate", "--length", "32", "--charset", "lower,digits"], environment: key)
        #expect(added.status == 0, "\(added.stderrText)")
        #expect(added.stdout.isEmpty)
        #expect(added.stderrText.contains("password of 32 characters") && added.stderrText.contains("bits"))
        let secret = try sandbox.run(["get", "db"], environment: key).stdoutText
        #expect(secret.count == 32 && secret.allSatisfy { $0.isLowercase || $0.isNumber })
        #expect(!added.stderrText.contains(secret))
        let list = try sandbox.run(["list", "--json"], environment: key).stdoutText
        #expect(list.contains("\"password\""))

        let phrase = try sandbox.run(["add", "phrase", "--generate", "--words", "4", "--separator", "."], environment: key)
        #expect(phrase.status == 0 && phrase.stdout.isEmpty)
        let words = try sandbox.run(["get", "phrase"], environment: key).stdoutText.split(separator: ".").map(String.init)
        let wordList = try Self.wordList()
        #expect(words.count == 4 && words.allSatisfy(wordList.contains))
        #expect(!words.contains { phrase.stderrText.contains($0) })

        // Standard input is not read with --generate, so a pipe's text is not what is stored.
        let ignored = try sandbox.run(["add", "piped", "--generate"], stdin: Data("typed".utf8), environment: key)
        #expect(ignored.status == 0)
        #expect(try sandbox.run(["get", "piped"], environment: key).stdoutText.count == 24)
    }

    @Test func addRefusesRecipeOptionsWithoutGenerateAndGenerateForTOTP() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let lone = try sandbox.run(["add", "x", "--length", "20"], stdin: Data("s".utf8), environment: key)
        #expect(lone.status == 64 && lone.stderrText.contains("--generate"))
        let totp = try sandbox.run(["add", "x", "--generate", "--kind", "totp"], environment: key)
        #expect(totp.status == 64)
        let bad = try sandbox.run(["add", "x", "--generate", "--length", "0"], environment: key)
        #expect(bad.status == 64)
        #expect(try sandbox.run(["list", "--json"], environment: key).stdoutText.trimmingCharacters(in: .whitespacesAndNewlines) == "[]")
    }
}
