/// The signed-in account as the app knows it. Not secret: it lives in the plain profile.
///
/// JSON keys: "id", "displayName", "email", "signInMethod", "onboardingComplete"; absent
/// optionals are left out, and a missing "onboardingComplete" reads as false.
public struct User: Sendable, Hashable, Codable {
    /// The account's stable identifier at the identity provider (e.g. the `sub` claim).
    public var id: String
    /// A name to show, if known.
    public var displayName: String?
    /// The account's email address, if known.
    public var email: String?
    /// How the user signed in, e.g. "password", "google", "apple".
    public var signInMethod: String?
    /// Whether the app's onboarding has been completed for this account.
    public var onboardingComplete: Bool

    /// Creates a user.
    public init(id: String, displayName: String? = nil, email: String? = nil, signInMethod: String? = nil,
                onboardingComplete: Bool = false) {
        self.id = id
        self.displayName = displayName
        self.email = email
        self.signInMethod = signInMethod
        self.onboardingComplete = onboardingComplete
    }

    /// Decodes from the JSON shape above.
    /// - Throws: `DecodingError.dataCorrupted` naming the member that is missing or mistyped.
    public init(from decoder: any Decoder) throws {
        let value = try JSONValue(from: decoder)
        let user: User
        do throws(JSONShapeError) {
            user = try User(json: JSONObjectReader(value, path: ""))
        } catch {
            throw error.decodingError(codingPath: decoder.codingPath)
        }
        self = user
    }

    /// Encodes to the JSON shape above.
    public func encode(to encoder: any Encoder) throws {
        try JSONValue.object(jsonMembers).encode(to: encoder)
    }
}

extension User {
    /// The JSON member names this type reads and writes.
    static let jsonKeys: Set<String> = ["id", "displayName", "email", "signInMethod", "onboardingComplete"]

    /// Reads a user from a JSON object; unknown members are ignored here (the profile keeps them).
    init(json: JSONObjectReader) throws(JSONShapeError) {
        self.init(id: try json.string("id"),
                  displayName: try json.optionalString("displayName"),
                  email: try json.optionalString("email"),
                  signInMethod: try json.optionalString("signInMethod"),
                  onboardingComplete: try json.optionalBool("onboardingComplete") ?? false)
    }

    /// The JSON members of this user.
    var jsonMembers: [String: JSONValue] {
        var members: [String: JSONValue] = ["id": .string(id), "onboardingComplete": .bool(onboardingComplete)]
        if let displayName { members["displayName"] = .string(displayName) }
        if let email { members["email"] = .string(email) }
        if let signInMethod { members["signInMethod"] = .string(signInMethod) }
        return members
    }
}
