import FoundationEssentials

/// What a published state said, without credentials: enough to tell whether another
/// process changed who is signed in.
struct SessionFingerprint: Equatable, Sendable {
    var state: String
    var userID: String?
    var anonymousID: String?
    var onboardingComplete: Bool?
    var expiresAt: Date?

    init(_ state: SessionState) {
        self.state = state.name
        self.userID = state.user?.id
        if case let .guest(anonymousID) = state { self.anonymousID = anonymousID }
        self.onboardingComplete = state.user?.onboardingComplete
        switch state {
        case let .signedIn(_, credentials), let .needsOnboarding(_, credentials): expiresAt = credentials.expiresAt
        case let .expired(_, _, expiresAt): self.expiresAt = expiresAt
        case .guest, .unavailable: expiresAt = nil
        }
    }
}

extension SessionManager {
    /// The session's state each time it changes: after `restore()`, sign-in, sign-out,
    /// entering guest mode, a refresh, the server ending the session, and onboarding done.
    ///
    /// Each call returns a new stream for one subscriber (any number may subscribe; each gets
    /// every change); it ends when the subscriber stops iterating. The stream starts with the
    /// state published last (after `restore()`), so a late subscriber gets the present value
    /// first; before the first `restore()` it starts empty. What another process changed (a `vault signout` in a terminal, say) is
    /// published at the latest on this manager's next call that reads the stores
    /// (`currentState()`, `restore()`, the item calls, `validCredentials`); the library does
    /// not watch the files.
    public func updates() -> AsyncStream<SessionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionState.self, bufferingPolicy: .bufferingNewest(16))
        let id = nextSubscriberID
        nextSubscriberID += 1
        updateSubscribers[id] = continuation
        if let lastPublishedState { continuation.yield(lastPublishedState) }
        continuation.onTermination = { _ in Task { await self.removeSubscriber(id) } }
        return stream
    }

    /// The signed-in user as the profile names them now (nil for a guest, a fleet session, or
    /// when the profile cannot be read). Reads the profile; does not open the vault.
    public var currentUser: User? {
        guard (try? backend.device(for: .profile)) != nil else { return nil }
        return (try? profiles.load())?.user
    }

    /// The state now, as `restore()` computes it, publishing it to `updates()` subscribers
    /// when it differs from the last one published.
    public func currentState(minTTL: Duration = .zero) async -> SessionState {
        await restore(minTTL: minTTL)
    }

    /// Publishes `state` to every subscriber when it differs from the last state published.
    func publish(_ state: SessionState) {
        let fingerprint = SessionFingerprint(state)
        guard fingerprint != lastPublished else { return }
        lastPublished = fingerprint
        lastPublishedState = state
        for continuation in updateSubscribers.values { continuation.yield(state) }
    }

    /// Publishes what another process changed: called by reads that load the profile.
    func noticeExternalChange(_ profile: Profile) async {
        guard let last = lastPublished else { return }
        let sameUser = last.userID == profile.user?.id
        let sameGuest = profile.user != nil || last.anonymousID == profile.anonymousID
        let sameOnboarding = profile.user == nil || last.onboardingComplete == profile.user?.onboardingComplete
        guard !(sameUser && sameGuest && sameOnboarding) else { return }
        publish(await loadState(minTTL: .zero))
    }

    private func removeSubscriber(_ id: UInt64) {
        updateSubscribers.removeValue(forKey: id)
    }
}
