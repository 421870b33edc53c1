/// A class of characters a generated password draws from.
public enum CharacterClass: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// `a`–`z` (26).
    case lower
    /// `A`–`Z` (26).
    case upper
    /// `0`–`9` (10).
    case digits
    /// The 32 ASCII punctuation characters `!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~` (space is not one).
    case symbols

    /// The class's characters, ASCII.
    public var characters: [UInt8] {
        switch self {
        case .lower: Array(UInt8(ascii: "a")...UInt8(ascii: "z"))
        case .upper: Array(UInt8(ascii: "A")...UInt8(ascii: "Z"))
        case .digits: Array(UInt8(ascii: "0")...UInt8(ascii: "9"))
        case .symbols: Array(##"!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~"##.utf8)
        }
    }

    /// The name, e.g. "digits".
    public var description: String { rawValue }

    /// Parses a comma-separated list of class names (`lower,upper,digits,symbols`), in any order and case.
    /// - Throws: `.invalidInput` for an empty list, an unknown name or a name given twice.
    public static func parseList(_ text: String) throws -> [CharacterClass] {
        var classes: [CharacterClass] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = part.trimmingCharacters(in: " ").lowercased()
            guard let found = CharacterClass(rawValue: name) else {
                throw VaultError(.invalidInput, name.isEmpty ? "a character class list has an empty name"
                                     : "'\(TerminalText.escaped(String(name.prefix(40))))' is not a character class; use lower, upper, digits, symbols")
            }
            guard !classes.contains(found) else { throw VaultError(.invalidInput, "the character class '\(found)' is named twice") }
            classes.append(found)
        }
        return classes
    }
}

private extension Substring {
    func trimmingCharacters(in character: Character) -> Substring {
        var text = self
        while text.first == character { text.removeFirst() }
        while text.last == character { text.removeLast() }
        return text
    }
}
