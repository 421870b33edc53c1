#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FoundationEssentials

/// What a generated secret looks like: a password of characters from some classes, or a
/// passphrase of words from EFF's large word list. Built only through the checking factories.
public struct SecretRecipe: Sendable, Equatable {
    /// The two shapes a generated secret takes.
    public enum Shape: Sendable, Equatable {
        /// `length` characters drawn from the union of `classes`, each class present at least once.
        case password(length: Int, classes: [CharacterClass])
        /// `words` words of EFF's large list joined by `separator`.
        case passphrase(words: Int, separator: String)
    }

    /// The shape, checked.
    public let shape: Shape

    /// The default password length: 24 characters of all four classes, about 157 bits.
    public static let defaultLength = 24
    /// Password lengths accepted.
    public static let lengthRange = 1...1_024
    /// The default passphrase length: 6 words, about 77.5 bits.
    public static let defaultWords = 6
    /// Passphrase lengths accepted.
    public static let wordsRange = 1...256
    /// The default word separator.
    public static let defaultSeparator = "-"
    /// The longest separator accepted, in UTF-8 bytes.
    public static let maximumSeparatorBytes = 32

    private init(shape: Shape) { self.shape = shape }

    /// A password recipe.
    /// - Parameters:
    ///   - length: characters, within `lengthRange` and at least one per class.
    ///   - classes: the classes, none twice, at least one.
    /// - Throws: `.invalidInput` naming the value that is out of range.
    public static func password(length: Int = defaultLength, classes: [CharacterClass] = CharacterClass.allCases) throws -> SecretRecipe {
        guard lengthRange.contains(length) else {
            throw VaultError(.invalidInput, "a password's length must be \(lengthRange.lowerBound) to \(lengthRange.upperBound) characters")
        }
        guard !classes.isEmpty else { throw VaultError(.invalidInput, "a password needs at least one character class") }
        guard Set(classes).count == classes.count else { throw VaultError(.invalidInput, "a character class is named twice") }
        guard length >= classes.count else {
            throw VaultError(.invalidInput, "a password of \(length) character\(length == 1 ? "" : "s") cannot hold one of each of \(classes.count) character classes")
        }
        return SecretRecipe(shape: .password(length: length, classes: classes))
    }

    /// A passphrase recipe.
    /// - Parameters:
    ///   - words: within `wordsRange`.
    ///   - separator: up to `maximumSeparatorBytes` UTF-8 bytes, no control characters; may be empty.
    /// - Throws: `.invalidInput` naming the value that is out of range.
    public static func passphrase(words: Int = defaultWords, separator: String = defaultSeparator) throws -> SecretRecipe {
        guard wordsRange.contains(words) else {
            throw VaultError(.invalidInput, "a passphrase's length must be \(wordsRange.lowerBound) to \(wordsRange.upperBound) words")
        }
        guard separator.utf8.count <= maximumSeparatorBytes else {
            throw VaultError(.invalidInput, "the word separator is longer than \(maximumSeparatorBytes) bytes")
        }
        guard !separator.unicodeScalars.contains(where: { TerminalText.needsEscaping($0) }) else {
            throw VaultError(.invalidInput, "the word separator holds a control or invisible character")
        }
        return SecretRecipe(shape: .passphrase(words: words, separator: separator))
    }

    /// The characters a password recipe draws from, in class order; empty for a passphrase.
    public var alphabet: [UInt8] {
        guard case .password(_, let classes) = shape else { return [] }
        return classes.flatMap(\.characters)
    }

    /// The entropy of one generated secret in bits: log2 of how many secrets the recipe can give,
    /// all equally likely. A passphrase: words × log2(7776) ≈ 12.925 bits a word. A password:
    /// length × log2(alphabet size), less the share of strings that miss a class (counted by
    /// inclusion–exclusion), since those are drawn again.
    public var entropyBits: Double {
        switch shape {
        case .passphrase(let words, _):
            return Double(words) * log2(Double(EFFLargeWordList.count))
        case .password(let length, let classes):
            let total = Double(classes.reduce(0) { $0 + $1.characters.count })
            var valid = 0.0
            for subset in 0..<(1 << classes.count) {
                let members = classes.indices.filter { subset & (1 << $0) != 0 }
                let size = Double(members.reduce(0) { $0 + classes[$1].characters.count })
                let sign = (classes.count - members.count) % 2 == 0 ? 1.0 : -1.0
                valid += sign * pow(size / total, Double(length))
            }
            return Double(length) * log2(total) + log2(valid)
        }
    }
}
