/// Checks names, labels and secrets against `VaultLimits` before anything is written.
enum EntryValidation {
    static func checkName(_ name: String) throws {
        try checkText(name, what: "entry name", cap: VaultLimits.maximumNameBytes, allowEmpty: false)
    }

    static func checkOwner(_ owner: String) throws {
        try checkText(owner, what: "owner", cap: VaultLimits.maximumNameBytes, allowEmpty: true)
    }

    static func checkLabel(_ label: String?) throws {
        guard let label else { return }
        try checkText(label, what: "label", cap: VaultLimits.maximumLabelBytes, allowEmpty: true)
    }

    static func checkSecret(byteCount: Int) throws {
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
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw VaultError(.invalidInput, "the \(what) contains control characters", fix: "use printable characters only")
        }
    }
}
