import CredentialVault
extension EntryKind {
    /// Reads a kind as a person types it: `accessToken`, `access-token`, `access_token`, in any case.
    /// - Parameter text: the kind's name.
    /// - Returns: nil when it names no kind.
    init?(userInput text: String) {
        let wanted = Self.normalized(text)
        guard let kind = EntryKind.allCases.first(where: { Self.normalized($0.rawValue) == wanted }) else { return nil }
        self = kind
    }

    /// The raw names, comma-separated, for help and error messages.
    static var acceptedNames: String {
        allCases.map(\.rawValue).joined(separator: ", ")
    }

    private static func normalized(_ text: String) -> String {
        String(text.lowercased().filter { $0 != "-" && $0 != "_" })
    }
}
