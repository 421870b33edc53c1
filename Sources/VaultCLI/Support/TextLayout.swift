import CredentialVault

/// Lays out text for people (aligned columns, label–value lists) and JSON for programs.
enum TextLayout {
    /// Columns separated by two spaces, each as wide as its widest cell; the last column is not padded.
    /// - Parameters:
    ///   - header: the column titles.
    ///   - rows: the cells, each row as many as `header`.
    /// - Returns: the lines, each ending in a newline.
    /// Every cell is escaped with `TerminalText` (cells are single lines of possibly untrusted text).
    static func table(header: [String], rows: [[String]]) -> String {
        let all = ([header] + rows).map { $0.map { TerminalText.escaped($0) } }
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        var text = ""
        for row in all {
            var line = ""
            for (column, cell) in row.enumerated() {
                let isLast = column == row.count - 1
                line += isLast ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }
            text += trimmedTrailingSpaces(line) + "\n"
        }
        return text
    }

    /// "label   value" lines, labels padded to the longest; later lines of a multi-line value are indented to match.
    ///
    /// Each line is escaped with `TerminalText`; a value's own line breaks are kept, so callers
    /// escape single-line untrusted values first (`TerminalText.escaped`) to keep a line
    /// break inside them from starting a line that looks like a field.
    static func fields(_ fields: [(label: String, value: String)]) -> String {
        let width = (fields.map(\.label.count).max() ?? 0) + 2
        var text = ""
        for field in fields {
            let pad = String(repeating: " ", count: width)
            let label = field.label + String(repeating: " ", count: width - field.label.count)
            let lines = field.value.split(separator: "\n", omittingEmptySubsequences: false)
            for (index, line) in lines.enumerated() {
                text += trimmedTrailingSpaces((index == 0 ? label : pad) + TerminalText.escaped(String(line))) + "\n"
            }
        }
        return text
    }

    /// Pretty-printed JSON with sorted keys and a final newline, the stable `--json` form.
    static func json(_ value: JSONValue) throws -> String {
        String(decoding: try value.serialized(prettyPrinted: true), as: UTF8.self) + "\n"
    }

    private static func trimmedTrailingSpaces(_ line: String) -> String {
        var line = Substring(line)
        while line.last == " " { line.removeLast() }
        return String(line)
    }
}
