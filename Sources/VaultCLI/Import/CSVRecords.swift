import VaultCrypto

/// Records of RFC 4180 CSV text (quoted fields with `""` for a quote, line breaks inside quotes),
/// read over bytes so that the fields holding passwords never become `String`s.
struct CSVRecords {
    /// Every record, each a list of fields.
    let records: [[SecureBytes]]

    /// Parses `bytes`; a UTF-8 byte-order mark at the start is skipped, CRLF and LF both end a record.
    /// - Throws: `CSVRecords.Malformed` with the line of a quote that is never closed or of text after a closing quote.
    init(parsing bytes: [UInt8]) throws {
        var records: [[SecureBytes]] = []
        var record: [SecureBytes] = []
        var field: [UInt8] = []
        defer { SecureWipe.wipe(&field) }
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        var line = 1, quoted = false, wasQuoted = false, quoteLine = 1
        func endField() {
            record.append(SecureBytes(copying: field))
            SecureWipe.wipe(&field)
            field = []
            wasQuoted = false
        }
        func endRecord() {
            endField()
            records.append(record)
            record = []
        }
        let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
        while index < bytes.count {
            let byte = bytes[index]
            if quoted {
                if byte == quote {
                    if index + 1 < bytes.count, bytes[index + 1] == quote {
                        field.append(quote)
                        index += 2
                        continue
                    }
                    quoted = false
                    wasQuoted = true
                } else {
                    if byte == lf { line += 1 }
                    field.append(byte)
                }
                index += 1
                continue
            }
            switch byte {
            case quote:
                guard field.isEmpty, !wasQuoted else { throw Malformed(line: line) }
                quoted = true
                quoteLine = line
            case comma:
                endField()
            case cr where index + 1 < bytes.count && bytes[index + 1] == lf:
                break
            case lf:
                endRecord()
                line += 1
            default:
                guard !wasQuoted else { throw Malformed(line: line) }
                field.append(byte)
            }
            index += 1
        }
        guard !quoted else { throw Malformed(line: quoteLine) }
        if !field.isEmpty || !record.isEmpty || wasQuoted { endRecord() }
        self.records = records
    }

    /// The text is not well-formed CSV.
    struct Malformed: Error {
        /// The line where the problem starts.
        let line: Int
    }
}
