import FoundationEssentials

/// A JSON member that exists but has the wrong type or value, named by its dotted path.
/// The message names the path and the kinds, never the value.
struct JSONShapeError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Dotted path of the member, e.g. "pendingSignIn.user.id".
    let path: String
    /// What is wrong, e.g. "must be a string, not a number".
    let problem: String

    /// "user.id must be a string, not a number".
    var description: String { path.isEmpty ? problem : "\(path) \(problem)" }
}

/// Typed, path-aware reads from a JSON object, for mapping documents onto model types.
///
/// "Optional" reads treat an absent member and `null` alike.
struct JSONObjectReader {
    /// The object's members.
    let members: [String: JSONValue]
    /// Dotted path of the object itself; empty for the top level.
    let path: String

    /// Wraps `value`, which must be an object.
    init(_ value: JSONValue, path: String) throws(JSONShapeError) {
        guard case .object(let members) = value else {
            throw JSONShapeError(path: path, problem: "must be an object, not \(value.kindDescription)")
        }
        self.members = members
        self.path = path
    }

    /// The dotted path of member `key`.
    func path(of key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    /// The member `key`, nil when absent or `null`.
    func optional(_ key: String) -> JSONValue? {
        guard let value = members[key], !value.isNull else { return nil }
        return value
    }

    /// A required string member.
    func string(_ key: String) throws(JSONShapeError) -> String {
        guard let value = try optionalString(key) else { throw missing(key, "a string") }
        return value
    }

    /// A string member, nil when absent or `null`.
    func optionalString(_ key: String) throws(JSONShapeError) -> String? {
        guard let value = optional(key) else { return nil }
        guard case .string(let string) = value else { throw wrongKind(key, value, expected: "a string") }
        return string
    }

    /// A Boolean member, nil when absent or `null`.
    func optionalBool(_ key: String) throws(JSONShapeError) -> Bool? {
        guard let value = optional(key) else { return nil }
        guard case .bool(let flag) = value else { throw wrongKind(key, value, expected: "true or false") }
        return flag
    }

    /// An object member, nil when absent or `null`.
    func optionalObject(_ key: String) throws(JSONShapeError) -> JSONObjectReader? {
        guard let value = optional(key) else { return nil }
        return try JSONObjectReader(value, path: path(of: key))
    }

    /// A required object member.
    func object(_ key: String) throws(JSONShapeError) -> JSONObjectReader {
        guard let reader = try optionalObject(key) else { throw missing(key, "an object") }
        return reader
    }

    /// A required ISO 8601 timestamp member.
    func timestamp(_ key: String) throws(JSONShapeError) -> Date {
        let text = try string(key)
        guard let date = ISO8601Timestamp.date(from: text) else {
            throw JSONShapeError(path: path(of: key), problem: "is not an ISO 8601 timestamp like 2026-01-31T08:15:00.000Z")
        }
        return date
    }

    /// The members whose names are not in `known`.
    func unknownMembers(known: Set<String>) -> [String: JSONValue] {
        members.filter { !known.contains($0.key) }
    }

    private func missing(_ key: String, _ expected: String) -> JSONShapeError {
        JSONShapeError(path: path(of: key), problem: "is missing; it must be \(expected)")
    }

    private func wrongKind(_ key: String, _ value: JSONValue, expected: String) -> JSONShapeError {
        JSONShapeError(path: path(of: key), problem: "must be \(expected), not \(value.kindDescription)")
    }
}

extension JSONShapeError {
    /// This error as a `DecodingError`, for `Decodable` conformances built on the readers.
    func decodingError(codingPath: [any CodingKey]) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: codingPath, debugDescription: description))
    }
}
