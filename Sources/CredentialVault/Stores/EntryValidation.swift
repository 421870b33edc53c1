import FoundationEssentials

/// Checks names, labels and secrets against `VaultLimits` before anything is written.
package enum EntryValidation {
    /// A name must also be in Unicode NFC, so two names that look the same (a precomposed
    /// "é" and "e" + combining accent) cannot both exist: the non-NFC one is refused with a fix.
    /// Names stay bytes in the format, so vaults written before this rule still open.
    package static func checkName(_ name: String) throws {
        try checkText(name, what: "entry name", cap: VaultLimits.maximumNameBytes, allowEmpty: false)
        try checkNormalized(name, what: "entry name")
    }

    package static func checkOwner(_ owner: String) throws {
        try checkText(owner, what: "owner", cap: VaultLimits.maximumNameBytes, allowEmpty: true)
        try checkNormalized(owner, what: "owner")
    }

    package static func checkLabel(_ label: String?) throws {
        guard let label else { return }
        try checkText(label, what: "label", cap: VaultLimits.maximumLabelBytes, allowEmpty: true)
    }

    /// Attributes: at most `VaultLimits.maximumAttributes`, each name 1…256 UTF-8 bytes, each value
    /// 0…1,024, neither holding NUL (the D-Bus and C clients that set them cannot carry one).
    /// Other characters are allowed (a Secret Service client may store any text); front ends escape them.
    package static func checkAttributes(_ attributes: [String: String]) throws {
        guard attributes.count <= VaultLimits.maximumAttributes else {
            throw VaultError(.invalidInput,
                             "the entry has \(attributes.count) attributes; the limit is \(VaultLimits.maximumAttributes)",
                             fix: "keep fewer attributes")
        }
        for (name, value) in attributes {
            let nameLength = name.utf8.count
            guard nameLength > 0 else {
                throw VaultError(.invalidInput, "an attribute name is empty", fix: "give every attribute a non-empty name")
            }
            guard nameLength <= VaultLimits.maximumAttributeNameBytes else {
                throw VaultError(.invalidInput,
                                 "an attribute name is \(nameLength) bytes; the limit is \(VaultLimits.maximumAttributeNameBytes) bytes",
                                 fix: "use a shorter attribute name")
            }
            let valueLength = value.utf8.count
            guard valueLength <= VaultLimits.maximumAttributeValueBytes else {
                throw VaultError(.invalidInput,
                                 "the value of attribute '\(TerminalText.escaped(name))' is \(valueLength) bytes; the limit is \(VaultLimits.maximumAttributeValueBytes) bytes",
                                 fix: "use a shorter attribute value")
            }
            guard !name.utf8.contains(0), !value.utf8.contains(0) else {
                throw VaultError(.invalidInput, "an attribute name or value contains a NUL character",
                                 fix: "remove the NUL characters")
            }
        }
    }

    package static func checkSecret(byteCount: Int) throws {
        guard byteCount <= VaultLimits.maximumSecretBytes else {
            throw VaultError(.invalidInput,
                             "the secret is \(byteCount) bytes; the limit is \(VaultLimits.maximumSecretBytes) bytes (1 MiB)",
                             fix: "store large files elsewhere and keep only their key in the vault")
        }
    }

    private static func checkText(_ text: String, what: String, cap: Int, allowEmpty: Bool) throws {
        let length = text.utf8.count
        guard allowEmpty || length > 0 else {
            throw VaultError(.invalidInput, "the \(what) is empty", fix: "give a non-empty \(what)")
        }
        guard length <= cap else {
            throw VaultError(.invalidInput, "the \(what) is \(length) bytes; the limit is \(cap) bytes",
                             fix: "use a shorter \(what)")
        }
        guard !text.unicodeScalars.contains(where: TerminalText.isControl) else {
            throw VaultError(.invalidInput, "the \(what) contains control characters", fix: "use printable characters only")
        }
        guard !text.unicodeScalars.contains(where: { TerminalText.isBidiControl($0) || Self.isLineBreak($0) }) else {
            throw VaultError(.invalidInput,
                             "the \(what) contains bidirectional-override or line-separator characters, which change how it is shown",
                             fix: "remove them (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069, U+2028/9)")
        }
    }

    private static func isLineBreak(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value == 0x2028 || scalar.value == 0x2029
    }

    private static func checkNormalized(_ text: String, what: String) throws {
        // Plain ASCII is always NFC; only other text needs the Unicode tables.
        guard !text.utf8.allSatisfy({ $0 < 0x80 }) else { return }
        // The standard library's own NFC (what swift-foundation's precomposed mapping uses),
        // so the check needs no ICU.
        guard text.utf8.elementsEqual(text._nfcCodeUnits) else {
            throw VaultError(.invalidInput,
                             "the \(what) is not in Unicode normal form C (NFC), so it could look the same as another name",
                             fix: "type it again in NFC (most keyboards and 'iconv'/'uconv -x nfc' produce it)")
        }
    }
}
