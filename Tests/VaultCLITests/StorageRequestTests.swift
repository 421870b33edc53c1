import CredentialVault
import Foundation
import Testing
import TestScheduling
@testable import VaultCLI

/// `CommandContext.storage(_:_:)`, the one way a command asks for a store: each request's refusals
/// come before any key is asked for (the context here has no key source and may not prompt, so a
/// key asked for would be a `UsageError` instead), and each reads the context's environment.
@Suite(.blockingWork) struct StorageRequestTests {
    static let postgresURL = "postgres://vault@db.test:5432/secrets"

    static func context(_ environment: CommandEnvironment = CommandEnvironment()) -> CommandContext {
        CommandContext(oauth: nil, postgres: nil, passphrases: CapturedPassphrases(values: [:]), environment: environment)
    }

    static func options(_ directory: String) throws -> VaultOptions {
        try VaultOptions.parse(["--vault", directory, "--no-prompt", "--no-agent"])
    }

    /// The code of the `VaultError` `body` throws (an issue is recorded when it throws none).
    static func code(_ body: () async throws -> Void) async -> VaultError.Code? {
        await #expect(throws: VaultError.self) { try await body() }?.code
    }

    @Test func theVaultFileRequestRefusesAPostgresStoreNamedByTheContextsEnvironment() async throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        let options = try Self.options(sandbox.vaultDirectory)
        let onPostgres = Self.context(CommandEnvironment([.vaultStore: Self.postgresURL]))
        #expect(await Self.code { _ = try await onPostgres.storage(.vaultFile(), options) } == .invalidInput)
        #expect(await Self.code { _ = try await onPostgres.storage(.vaultFile(.openOrCreate), options) } == .invalidInput)
        // migrate-store's request takes the file whatever is selected: here there is none.
        #expect(await Self.code { _ = try await onPostgres.storage(.vaultFileWhateverSelected(), options) } == .notFound)
        // The selected store and the entry commands' go to PostgreSQL, which this executable does not link.
        #expect(await Self.code { _ = try await onPostgres.storage(.selected(), options) } == HelperExecutable.postgres.missing().code)
        #expect(await Self.code { _ = try await onPostgres.storage(.entries, options) } == HelperExecutable.postgres.missing().code)
        // The same context without the variable opens the file: none here.
        #expect(await Self.code { _ = try await Self.context().storage(.vaultFile(), options) } == .notFound)
        #expect(await Self.code { _ = try await Self.context().storage(.entries, options) } == .notFound)
    }

    @Test func fleetSessionsLiveInPostgresOnly() async throws {
        let sandbox = try CLISandbox()
        defer { sandbox.cleanUp() }
        #expect(await Self.code { _ = try await Self.context().storage(.fleetSessions, try Self.options(sandbox.vaultDirectory)) } == .invalidInput)
    }

    @Test func openingAndCreatingSayWhatIsThereBeforeAskingForAKey() async throws {
        let (sandbox, _) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        let existing = try Self.options(sandbox.vaultDirectory)
        #expect(await Self.code { _ = try await Self.context().storage(.vaultFile(.create), existing) } == .alreadyExists)
        #expect(await Self.code { _ = try await Self.context().storage(.selected(.create), existing) } == .alreadyExists)
        // Opening an existing vault, or creating a missing one, needs the key: none can be found here.
        let missing = try Self.options(sandbox.path("none"))
        for (request, options) in [(StorageRequest<SecretStore>.vaultFile(), existing), (.vaultFile(.openOrCreate), missing)] {
            do {
                _ = try await Self.context().storage(request, options)
                Issue.record("a store without a key")
            } catch let error as UsageError {
                #expect(error.message.contains("no key for the vault"), "\(error)")
            }
        }
        #expect(!SecretStore.exists(in: sandbox.path("none")))
    }
}
