import CredentialVault
import VaultCLI

/// org.freedesktop.Secret.Prompt on /org/freedesktop/secrets/prompt/N: Prompt asks the vault's
/// passphrase through `$VAULT_PINENTRY` on a thread of its own (never the bus thread), unlocks the
/// vault through the handler, and Completed reports the outcome: (false, the unlocked paths), or
/// (true, nothing) when the prompt was dismissed, no pinentry is configured, the user cancelled or
/// the passphrase was wrong (that error is logged).
extension SecretServiceProvider {
    func promptMethod(_ call: Call, path: String) throws -> Answer {
        guard let prompt = prompts[path] else { throw BusError.noSuchObject(path) }
        guard prompt.owner == call.sender else { throw BusError.accessDenied("the prompt \(path) belongs to another connection") }
        switch call.member {
        case "Prompt":
            _ = try call.expect("s")
            guard !prompt.running else { throw BusError.failed("the prompt \(path) is already running") }
            prompt.running = true
            return Answer { [self] in start(prompt) }
        case "Dismiss":
            _ = try call.expect("")
            return Answer { [self] in complete(prompt, dismissed: true) }
        default:
            throw BusError.unknownMethod(Interface.prompt, call.member)
        }
    }

    /// Completes a prompt: Completed(dismissed, ao) from its path, and it is forgotten.
    func complete(_ prompt: PendingPrompt, dismissed: Bool) {
        guard prompts[prompt.path] === prompt else { return }
        prompts[prompt.path] = nil
        emit(prompt.path, Interface.prompt, "Completed", [.boolean(dismissed), .variant(.paths(dismissed ? [] : prompt.unlocking))])
        if !dismissed {
            emit(SecretPaths.service, Interface.service, "CollectionChanged", [.objectPath(SecretPaths.collection(VaultCollection.id))])
        }
    }

    private func start(_ prompt: PendingPrompt) {
        guard vault.isLocked else { return complete(prompt, dismissed: false) }
        guard let program = setup.environment[.vaultPinentry] else {
            setup.log("cannot unlock \(setup.directory) for a Secret Service prompt: VAULT_PINENTRY names no pinentry program; "
                      + "the prompt was dismissed (unlock it with 'vault unlock')")
            return complete(prompt, dismissed: true)
        }
        let directory = setup.directory, environment = setup.environment, handler = setup.handler, log = setup.log
        let thread = self.thread, path = prompt.path
        ServiceThread.start {
            // Off the bus thread: the pinentry waits for a person (bounded by Pinentry's own timeout).
            var dismissed = true
            do {
                let passphrase = try Pinentry.askPassphrase(program: program, description: "Passphrase for the vault in \(directory)",
                                                            environment: environment)
                switch handler.answer(.unlock(directory: directory, key: .passphrase(passphrase))) {
                case .done:
                    dismissed = false
                case let .refused(error):
                    log("a Secret Service prompt did not unlock \(directory): \(Self.describe(error))")
                default:
                    break
                }
            } catch {
                log("a Secret Service prompt did not unlock \(directory): \(Self.pinentryProblem(error))")
            }
            let outcome = dismissed
            thread.enqueue { [self] in
                if let waiting = prompts[path] { complete(waiting, dismissed: outcome) }
            }
        }
    }

    /// A pinentry failure for the log (its messages name the program and what failed, never a value).
    private static func pinentryProblem(_ error: any Error) -> String {
        if error is VaultError { return describe(error) }
        return String(describing: error)
    }
}

