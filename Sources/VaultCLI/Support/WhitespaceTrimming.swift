extension StringProtocol {
    /// The text without leading and trailing white space and line breaks (what Foundation's
    /// `trimmingCharacters(in: .whitespacesAndNewlines)` does, without needing full Foundation).
    func trimmingWhitespace() -> String {
        String(drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
    }
}
