/// Generates passwords and passphrases from OpenSSL's CSPRNG with unbiased selection.
///
/// Every character or word index is drawn by rejection sampling (`UniformSampler`). A password
/// that misses one of its classes is thrown away whole and drawn again, so every password that
/// holds each class is exactly as likely as any other (placing one character of each class at
/// chosen positions would make those positions guessable); `SecretRecipe.entropyBits` counts
/// only those passwords.
public enum SecretGenerator {
    /// How many whole passwords may be thrown away for a missing class before giving up. The
    /// worst recipe accepted (4 characters, 4 classes) keeps about 1 draw in 15, so a working
    /// source fails this with a probability below 10^-300.
    package static let maximumPasswordAttempts = 10_000

    /// Generates one secret.
    /// - Returns: the secret in zeroising memory: ASCII for a password, the words and separators
    ///   (UTF-8) for a passphrase.
    /// - Throws: `CryptoError` when the random generator fails; `.invalidInput` when it keeps
    ///   giving rejected values.
    public static func generate(_ recipe: SecretRecipe) throws -> SecureBytes {
        try generate(recipe, sampler: .secure)
    }

    /// Generates one secret from `sampler`'s randomness (tests pass a fixed source).
    package static func generate(_ recipe: SecretRecipe, sampler: UniformSampler) throws -> SecureBytes {
        switch recipe.shape {
        case .password(let length, let classes):
            return try password(length: length, classes: classes, sampler: sampler)
        case .passphrase(let words, let separator):
            return try passphrase(words: words, separator: separator, sampler: sampler)
        }
    }

    private static func password(length: Int, classes: [CharacterClass], sampler: UniformSampler) throws -> SecureBytes {
        let sets = classes.map(\.characters)
        let alphabet = sets.flatMap { $0 }
        for _ in 0..<maximumPasswordAttempts {
            let candidate = try SecureBytes(count: length) { out in
                for position in 0..<length { out[position] = alphabet[try sampler.value(below: alphabet.count)] }
            }
            let complete = candidate.withUnsafeBytes { bytes in sets.allSatisfy { set in bytes.contains(where: set.contains) } }
            if complete { return candidate }
        }
        throw VaultError(.invalidInput, "no password holding every character class came out of \(maximumPasswordAttempts) draws")
    }

    private static func passphrase(words: Int, separator: String, sampler: UniformSampler) throws -> SecureBytes {
        let list = EFFLargeWordList.words
        var indices = [Int](repeating: 0, count: words)
        defer { for index in indices.indices { indices[index] = 0 } }
        for position in 0..<words { indices[position] = try sampler.value(below: list.count) }
        let separatorBytes = Array(separator.utf8)
        let total = indices.reduce(0) { $0 + list[$1].utf8.count } + separatorBytes.count * (words - 1)
        return SecureBytes(count: total) { out in
            var offset = 0
            for (position, index) in indices.enumerated() {
                if position > 0 {
                    for byte in separatorBytes { out[offset] = byte; offset += 1 }
                }
                for byte in list[index].utf8 { out[offset] = byte; offset += 1 }
            }
        }
    }
}
