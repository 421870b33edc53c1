import CredentialVault
import FoundationEssentials

extension EntryMetadata {
    /// The entry as `vault list --json` prints it: `name`, `owner`, `kind`, `label` (or null),
    /// `createdAt`, `updatedAt`, `expiresAt` (RFC 3339 UTC, or null), `expired`,
    /// `secretBytes`, `transferable` and `attributes` (an object of strings, `{}` when none). Never the secret.
    /// - Parameter now: the time `expired` is judged at.
    /// - Returns: a JSON object.
    func jsonValue(now: Date) -> JSONValue {
        .object([
            "name": .string(name),
            "owner": .string(owner),
            "kind": .string(kind.rawValue),
            "label": label.map(JSONValue.string) ?? .null,
            "createdAt": .string(RFC3339.string(from: createdAt)),
            "updatedAt": .string(RFC3339.string(from: updatedAt)),
            "expiresAt": expiresAt.map { JSONValue.string(RFC3339.string(from: $0)) } ?? .null,
            "expired": .bool(isExpired(at: now)),
            "secretBytes": .number(Double(secretByteCount)),
            "transferable": .bool(transferable),
            "attributes": .object(attributes.mapValues(JSONValue.string)),
        ])
    }
}

extension VerificationReport {
    /// The report as `vault verify --json` prints it: `vaultId`, `generation`,
    /// `entriesChecked`, `intact`, `failures` (each `owner`, `name`, `code`, `message`), and
    /// `format` for a vault file.
    var jsonValue: JSONValue {
        var members: [String: JSONValue] = [
            "vaultId": .string(vaultID),
            "generation": .integer(Int128(generation)),
            "entriesChecked": .integer(Int128(entriesChecked)),
            "intact": .bool(isIntact),
            "failures": .array(failures.map { failure in
                .object([
                    "owner": .string(failure.owner),
                    "name": .string(failure.name),
                    "code": .string(failure.error.code.rawValue),
                    "message": .string(failure.error.message),
                ])
            }),
        ]
        if let formatVersion { members["format"] = .integer(Int128(formatVersion)) }
        return .object(members)
    }
}
