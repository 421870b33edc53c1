@testable import CredentialVault
import Foundation
import Testing
import VaultCrypto

/// Generated passwords and passphrases: uniform (chi-square), of the shape asked for, and the
/// recipes' checks. Each chi-square test compares with the critical value at p = 0.001 for its
/// degrees of freedom (scipy.stats.chi2.ppf(0.999, df)): a correct generator fails one such
/// test once in a thousand runs, and the four statistics here together at most 0.4 % of runs
/// (the per-position table and the pooled counts, all passwords of two classes, the words). A biased
/// generator exceeds it by far at these sample sizes: plain `byte % 26` gives each of the first 22
/// letters 10 of 256 byte values and the last 4 only 9, a pooled statistic near 215 where the
/// limit is 52.62 (`aModuloBiasedDrawFailsThePooledTest` shows it).
@Suite struct SecretGeneratorTests {
    static func text(_ secret: SecureBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

    /// Pearson's chi-square statistic of `observed` against equal expected counts.
    static func chiSquare(_ observed: [Int]) -> Double {
        let expected = Double(observed.reduce(0, +)) / Double(observed.count)
        return observed.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
    }

    @Test func everyPositionOfALowerCasePasswordIsUniform() throws {
        // 10,000 passwords × 16 positions × 26 letters: about 385 per cell.
        let recipe = try SecretRecipe.password(length: 16, classes: [.lower])
        var table = [[Int]](repeating: [Int](repeating: 0, count: 26), count: 16)
        for _ in 0..<10_000 {
            let secret = try SecretGenerator.generate(recipe)
            secret.withUnsafeBytes { bytes in
                for (position, byte) in bytes.enumerated() { table[position][Int(byte - UInt8(ascii: "a"))] += 1 }
            }
        }
        // Per position, each row is one chi-square with 25 degrees of freedom; their sum has 16 × 25 = 400.
        let statistic = table.reduce(0.0) { $0 + Self.chiSquare($1) }
        #expect(statistic < 493.13, "chi-square \(statistic) over 400 degrees of freedom")
        let pooled = (0..<26).map { letter in table.reduce(0) { $0 + $1[letter] } }
        #expect(Self.chiSquare(pooled) < 52.62, "pooled chi-square \(Self.chiSquare(pooled)) over 25 degrees of freedom")
    }

    @Test func aModuloBiasedDrawFailsThePooledTest() throws {
        // The same sample size as above, letters drawn the naive way: the test has the power to see it.
        var pooled = [Int](repeating: 0, count: 26)
        let bytes = try SecureRandom.bytes(count: 160_000)
        for byte in bytes { pooled[Int(byte) % 26] += 1 }
        #expect(Self.chiSquare(pooled) > 52.62, "chi-square \(Self.chiSquare(pooled)) of a modulo-biased draw")
    }

    @Test func everyPasswordHoldingEachClassIsEquallyLikely() throws {
        // Two characters, digits and lower: 2 × 10 × 26 = 520 passwords hold both; 52,000 draws,
        // 100 expected each; 519 degrees of freedom.
        let recipe = try SecretRecipe.password(length: 2, classes: [.digits, .lower])
        var counts: [String: Int] = [:]
        for _ in 0..<52_000 { counts[Self.text(try SecretGenerator.generate(recipe)), default: 0] += 1 }
        #expect(counts.count == 520)
        #expect(counts.keys.allSatisfy { $0.contains(where: \.isNumber) && $0.contains(where: \.isLowercase) })
        let statistic = Self.chiSquare(Array(counts.values))
        #expect(statistic < 624.29, "chi-square \(statistic) over 519 degrees of freedom")
        #expect(abs(recipe.entropyBits - log2(520)) < 1e-9)
    }

    @Test func passphraseWordsAreUniformOverTheList() throws {
        // 10,000 passphrases × 8 words = 80,000 words over 7,776: about 10.3 per word, 7,775 degrees of freedom.
        let recipe = try SecretRecipe.passphrase(words: 8, separator: " ")
        let position = Dictionary(uniqueKeysWithValues: EFFLargeWordList.words.enumerated().map { ($1, $0) })
        var counts = [Int](repeating: 0, count: EFFLargeWordList.count)
        for _ in 0..<10_000 {
            let words = Self.text(try SecretGenerator.generate(recipe)).split(separator: " ")
            #expect(words.count == 8)
            for word in words { counts[try #require(position[String(word)])] += 1 }
        }
        let statistic = Self.chiSquare(counts)
        #expect(statistic < 8166.06, "chi-square \(statistic) over 7,775 degrees of freedom")
    }

    @Test func theDefaultPasswordHasEveryClassAndItsLength() throws {
        let recipe = try SecretRecipe.password()
        for _ in 0..<200 {
            let text = Self.text(try SecretGenerator.generate(recipe))
            #expect(text.utf8.count == 24)
            for characterClass in CharacterClass.allCases {
                #expect(text.utf8.contains(where: characterClass.characters.contains), "\(characterClass) missing")
            }
        }
        // 24 × log2(94) = 157.31, less a hair for the passwords that miss a class.
        #expect(recipe.entropyBits > 157.0 && recipe.entropyBits < 157.32)
    }

    @Test func aPassphraseIsWordsOfTheListJoinedBySeparator() throws {
        let recipe = try SecretRecipe.passphrase(words: 5, separator: "::")
        let text = Self.text(try SecretGenerator.generate(recipe))
        let words = text.components(separatedBy: "::")
        #expect(words.count == 5)
        #expect(words.allSatisfy(Set(EFFLargeWordList.words).contains))
        #expect(abs(try SecretRecipe.passphrase(words: 6).entropyBits - 77.5489) < 0.001)
        #expect(Self.text(try SecretGenerator.generate(try SecretRecipe.passphrase(words: 3, separator: ""))).allSatisfy { $0.isLowercase || $0 == "-" })
    }

    @Test func characterClassListsAreParsedStrictly() throws {
        #expect(try CharacterClass.parseList("lower,upper,digits,symbols") == CharacterClass.allCases)
        #expect(try CharacterClass.parseList(" Digits , lower") == [.digits, .lower])
        for bad in ["", "lower,", "lower,,upper", "letters", "lower,lower", "digits;symbols"] {
            #expect(throws: VaultError.self, "\(bad)") { try CharacterClass.parseList(bad) }
        }
        let error = try #require(throws: VaultError.self) { try CharacterClass.parseList("lower,emoji") }
        #expect(error.message.contains("'emoji'") && error.code == .invalidInput)
    }

    @Test func recipesOutOfRangeAreRefused() throws {
        for length in [0, -1, 1_025, Int.max] {
            #expect(throws: VaultError.self, "length \(length)") { try SecretRecipe.password(length: length) }
        }
        #expect(throws: VaultError.self) { try SecretRecipe.password(length: 3) } // four classes need four characters
        #expect(throws: VaultError.self) { try SecretRecipe.password(length: 10, classes: []) }
        #expect(throws: VaultError.self) { try SecretRecipe.password(length: 10, classes: [.lower, .lower]) }
        for words in [0, -3, 257] {
            #expect(throws: VaultError.self, "words \(words)") { try SecretRecipe.passphrase(words: words) }
        }
        #expect(throws: VaultError.self) { try SecretRecipe.passphrase(separator: "\n") }
        #expect(throws: VaultError.self) { try SecretRecipe.passphrase(separator: "\u{202E}") }
        #expect(throws: VaultError.self) { try SecretRecipe.passphrase(separator: String(repeating: "x", count: 33)) }
        #expect(try SecretRecipe.password(length: 1, classes: [.digits]).entropyBits == log2(10))
        #expect(try SecretRecipe.password(length: 1_024).alphabet.count == 94)
    }
}

/// The committed word list is EFF's, whole, and the embedded Swift copy matches it.
@Suite struct WordListIntegrityTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/CredentialVault/Generation")

    @Test func theCommittedFileIsEFFsPublishedList() throws {
        let data = try Data(contentsOf: Self.folder.appendingPathComponent("Resources/eff_large_wordlist.txt"))
        // The SHA-256 of https://www.eff.org/files/2016/07/18/eff_large_wordlist.txt.
        #expect(try SHA256.hash(data).hexString == "addd35536511597a02fa0a9ff1e5284677b8883b83e986e43f15a3db996b903e")
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == 7_776)
        let words = lines.map { String($0.split(separator: "\t")[1]) }
        #expect(words == EFFLargeWordList.words)
        // Dice numbers 11111 … 66666, in order.
        #expect(lines.first?.hasPrefix("11111\t") == true && lines.last?.hasPrefix("66666\t") == true)
        #expect(FileManager.default.fileExists(atPath: Self.folder.appendingPathComponent("Resources/EFF-WORDLIST-LICENSE.md").path))
    }

    @Test func theEmbeddedListHas7776UniqueWords() {
        #expect(EFFLargeWordList.words.count == 7_776)
        #expect(EFFLargeWordList.count == 7_776)
        #expect(Set(EFFLargeWordList.words).count == 7_776)
        #expect(EFFLargeWordList.words.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLowercase || $0 == "-") } })
    }
}
