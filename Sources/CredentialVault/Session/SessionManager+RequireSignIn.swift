import FoundationEssentials

extension SessionManager {
    /// Returns the signed-in user, waiting for a sign-in when there is none: the pattern of
    /// an action (favourite, comment, purchase) that needs an account and continues once
    /// the person has signed in.
    ///
    /// When nobody is signed in — or the session can no longer give a token (the access token
    /// expired and there is no refresh token: that session then ends, as `validCredentials` ends
    /// it) — `presentSignIn` is called (show your login screen there),
    /// and the call suspends until `signIn(user:credentials:policy:)` succeeds, then returns
    /// that user. Every waiter resumes with the same user. The login screen ends a declined
    /// or closed login with `cancelSignInRequests()`, which makes every waiter throw
    /// `.signInCancelled`. Cancelling the waiting task throws `CancellationError` for that
    /// waiter only.
    /// - Parameter presentSignIn: Called on the session's executor when a sign-in is needed;
    ///   not called when someone is already signed in.
    /// - Returns: The signed-in user.
    /// - Throws: `.signInCancelled`; `CancellationError`; profile store errors.
    public func requireSignIn(presentSignIn: @Sendable () -> Void = {}) async throws -> User {
        try requireDeviceSession(.signInScreen)
        if let user = try profiles.load()?.user {
            // A session no token can renew is over: the sign-in is presented, not the old user returned.
            guard !isRenewable() else { return user }
            let lock = try await sessionLock(waitingForRefresh: false)
            defer { lock.release() }
            if let current = try profiles.load()?.user {
                guard current.id == user.id, !isRenewable() else { return current }
                try endUnrenewableSession(of: current)
            }
        }
        try Task.checkCancellation()
        let id = nextWaiterID
        nextWaiterID += 1
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<User, any Error>) in
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                    return
                }
                signInWaiters[id] = continuation
                presentSignIn()
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    /// Ends every pending `requireSignIn` with `.signInCancelled`: the person declined or
    /// closed the login. Does nothing when nobody waits.
    public func cancelSignInRequests() {
        resumeSignInWaiters(with: .failure(VaultError(.signInCancelled, "the sign-in was cancelled")))
    }

    /// How many `requireSignIn` calls are waiting.
    public var pendingSignInRequests: Int { signInWaiters.count }

    func resumeSignInWaiters(with result: Result<User, any Error>) {
        let waiters = signInWaiters
        signInWaiters = [:]
        for continuation in waiters.values { continuation.resume(with: result) }
    }

    private func cancelWaiter(_ id: UInt64) {
        signInWaiters.removeValue(forKey: id)?.resume(throwing: CancellationError())
    }
}
