import ArgumentParser
import CredentialVault

/// The options that shape a generated secret, shared by `vault generate` and `vault add --generate`.
struct SecretRecipeOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "A password of N characters (1-\(SecretRecipe.lengthRange.upperBound); default \(SecretRecipe.defaultLength)). "
            + "Entropy: N × log2(size of the character set); 24 of all four classes ≈ 157 bits.",
        valueName: "N"))
    var length: Int?

    @Option(help: ArgumentHelp(
        "The character classes, comma-separated: lower (26), upper (26), digits (10), symbols (32 ASCII punctuation); "
            + "default all four. Each class named appears at least once.",
        valueName: "CLASSES"),
            completion: .list(["lower,upper,digits,symbols", "lower,upper,digits", "lower,digits", "digits"]))
    var charset: String?

    @Option(help: ArgumentHelp(
        "A passphrase of N words from EFF's large word list (1-\(SecretRecipe.wordsRange.upperBound)) instead of a password. "
            + "Entropy: N × log2(7776) ≈ 12.9 bits a word; 6 words ≈ 77.5 bits.",
        valueName: "N"))
    var words: Int?

    @Option(help: ArgumentHelp("With --words: what goes between the words (default \"\(SecretRecipe.defaultSeparator)\").",
                               valueName: "S"))
    var separator: String?

    /// Whether any of the options was given.
    var isGiven: Bool { length != nil || charset != nil || words != nil || separator != nil }

    func validate() throws {
        if words != nil, length != nil || charset != nil {
            throw ValidationError("--words makes a passphrase; --length and --charset go with a password")
        }
        if separator != nil, words == nil { throw ValidationError("--separator goes with --words") }
    }

    /// The recipe the options describe.
    /// - Throws: `.invalidInput` (exit 64) for a value out of range or an unknown class.
    func recipe() throws -> SecretRecipe {
        if let words {
            return try SecretRecipe.passphrase(words: words, separator: separator ?? SecretRecipe.defaultSeparator)
        }
        let classes = try charset.map(CharacterClass.parseList) ?? CharacterClass.allCases
        return try SecretRecipe.password(length: length ?? SecretRecipe.defaultLength, classes: classes)
    }
}

extension SecretRecipe {
    /// "password of 24 characters (lower, upper, digits, symbols), 157 bits" — never the secret.
    var summary: String {
        let bits = Int(entropyBits.rounded(.down))
        switch shape {
        case .password(let length, let classes):
            return "password of \(length) character\(length == 1 ? "" : "s") (\(classes.map(\.rawValue).joined(separator: ", "))), \(bits) bits of entropy"
        case .passphrase(let words, _):
            return "passphrase of \(words) word\(words == 1 ? "" : "s"), \(bits) bits of entropy"
        }
    }
}
