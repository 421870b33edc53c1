/// What sign-out does with the signed-out user's own items (favourites, downloads).
/// Credentials are always destroyed.
public enum LocalDataPolicy: String, Sendable, Equatable {
    /// Remove the user's items with the credentials.
    case wipe
    /// Keep the user's items (encrypted, under the user's namespace) for the same user's next
    /// sign-in on this device; a guest's items are merged into them then, by the merge policy.
    case keep
}
