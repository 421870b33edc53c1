import CredentialVault
import FoundationEssentials
import VaultCLI
import VaultCrypto

/// A Secret Service client that reads every item of the provider owning `org.freedesktop.secrets`
/// now (gnome-keyring, KeePassXC, …): what `vault import --from secret-service` copies.
///
/// It opens a `dh-ietf1024-sha256-aes128-cbc-pkcs7` session (plain when the provider has no other),
/// unlocks each locked collection (through the provider's prompt when it asks for one, waiting for
/// Completed), then reads the secrets with GetSecrets and each item's Label, Attributes, Created and
/// Modified. Everything within `timeout`.
struct SecretServiceExporter {
    /// How long the whole export may take.
    let timeout: Duration
    /// The bus to ask instead of the session bus (a test's private bus).
    let busAddress: String?

    private static let service = "org.freedesktop.secrets"
    private enum Interface {
        static let service = "org.freedesktop.Secret.Service"
        static let collection = "org.freedesktop.Secret.Collection"
        static let item = "org.freedesktop.Secret.Item"
        static let prompt = "org.freedesktop.Secret.Prompt"
        static let session = "org.freedesktop.Secret.Session"
        static let properties = "org.freedesktop.DBus.Properties"
    }

    /// Every item of every collection.
    /// - Throws: `VaultError` `.busUnavailable` without a bus or a provider, `.vaultLocked` for a
    ///   collection left locked, `.io` for a provider that fails or answers out of shape.
    func export() throws -> [SecretServiceItemExport] {
        let deadline = ContinuousClock.now + timeout
        let connection = try BusConnection.openSessionBus(description: "vault-import", address: busAddress)
        defer { connection.close() }
        do {
            let session = try openSession(connection, deadline)
            defer { _ = try? connection.call(destination: Self.service, path: session.path, interface: Interface.session, member: "Close") }
            let collections = try property(connection, path: SecretPaths.service, interface: Interface.service, name: "Collections",
                                           deadline).objectPaths ?? []
            var exports: [SecretServiceItemExport] = []
            for collection in collections {
                let properties = try allProperties(connection, path: collection, interface: Interface.collection, deadline)
                if properties["Locked"]?.unwrapped.booleanValue == true { try unlock(collection, connection, deadline) }
                let label = properties["Label"]?.unwrapped.stringValue ?? ""
                let items = try property(connection, path: collection, interface: Interface.collection, name: "Items", deadline).objectPaths ?? []
                guard !items.isEmpty else { continue }
                let answer = try connection.call(destination: Self.service, path: SecretPaths.service, interface: Interface.service,
                                                 member: "GetSecrets", arguments: [.paths(items), .objectPath(session.path)],
                                                 timeout: try left(deadline), sensitive: true)
                let secrets = answer.first?.dictionary ?? [:]
                for item in items {
                    // An item left out of GetSecrets' answer (still locked, or gone meanwhile) stops the
                    // import rather than being dropped without a word.
                    guard case let .structure(members)? = secrets[item], members.count == 4, case let .bytes(parameters) = members[1],
                          case let .bytes(value) = members[2] else {
                        throw VaultError(.io, "the Secret Service provider gave no secret for \(TerminalText.escaped(item)) "
                                         + "(collection \(TerminalText.escaped(label))): it may still be locked, or was removed meanwhile",
                                         fix: "unlock the collection in the provider and run the import again; nothing was imported")
                    }
                    let itemProperties = try allProperties(connection, path: item, interface: Interface.item, deadline)
                    exports.append(SecretServiceItemExport(
                        collection: label, label: itemProperties["Label"]?.unwrapped.stringValue ?? "",
                        attributes: itemProperties["Attributes"]?.unwrapped.stringDictionaryValue ?? [:],
                        secret: try session.decode(parameters: parameters, value: value),
                        contentType: members[3].stringValue ?? "text/plain",
                        created: itemProperties["Created"]?.unwrapped.uint64Value.map(Self.date),
                        modified: itemProperties["Modified"]?.unwrapped.uint64Value.map(Self.date)))
                }
            }
            return exports
        } catch let error as BusError {
            if error.name == "org.freedesktop.DBus.Error.ServiceUnknown" || error.name == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                throw VaultError(.busUnavailable, "no program owns \(Self.service) on the session bus",
                                 fix: "start the Secret Service provider to import from (e.g. gnome-keyring-daemon)")
            }
            throw VaultError(.io, "the Secret Service provider failed: \(error.message)")
        }
    }

    /// A dh session, or a plain one when the provider refuses dh.
    private func openSession(_ connection: BusConnection, _ deadline: ContinuousClock.Instant) throws -> TransferSession {
        let agreement = try SecretServiceKeyAgreement()
        do {
            let answer = try connection.call(destination: Self.service, path: SecretPaths.service, interface: Interface.service,
                                             member: "OpenSession",
                                             arguments: [.string(SecretServiceKeyAgreement.algorithm),
                                                         .variant(.bytes(SecureBytes(copying: agreement.publicKey)))],
                                             timeout: try left(deadline))
            guard answer.count == 2, case let .bytes(peer) = answer[0].unwrapped, let path = answer[1].objectPathValue else {
                throw VaultError(.io, "the Secret Service provider answered OpenSession out of shape")
            }
            let key = try agreement.sessionKey(peerPublicKey: peer.withUnsafeBytes { Array($0) })
            return TransferSession(path: path, owner: "", key: key)
        } catch let error as BusError where error.name == "org.freedesktop.DBus.Error.NotSupported" {
            let answer = try connection.call(destination: Self.service, path: SecretPaths.service, interface: Interface.service,
                                             member: "OpenSession", arguments: [.string("plain"), .variant(.string(""))],
                                             timeout: try left(deadline))
            guard answer.count == 2, let path = answer[1].objectPathValue else {
                throw VaultError(.io, "the Secret Service provider answered OpenSession out of shape")
            }
            return TransferSession(path: path, owner: "", key: nil)
        }
    }

    /// Unlocks a collection, through the provider's prompt when it asks for one.
    private func unlock(_ collection: String, _ connection: BusConnection, _ deadline: ContinuousClock.Instant) throws {
        let answer = try connection.call(destination: Self.service, path: SecretPaths.service, interface: Interface.service,
                                         member: "Unlock", arguments: [.paths([collection])], timeout: try left(deadline))
        guard answer.count == 2, let prompt = answer[1].objectPathValue else {
            throw VaultError(.io, "the Secret Service provider answered Unlock out of shape")
        }
        guard prompt != SecretPaths.none else { return }
        final class Outcome { var dismissed: Bool? }
        let outcome = Outcome()
        try connection.matchSignal(sender: nil, path: prompt, interface: Interface.prompt, member: "Completed") { message in
            outcome.dismissed = (try? BusMessage.readBody(message))?.first?.booleanValue ?? true
            return true
        }
        _ = try connection.call(destination: Self.service, path: prompt, interface: Interface.prompt, member: "Prompt",
                                arguments: [.string("")], timeout: try left(deadline))
        while outcome.dismissed == nil {
            guard connection.processPending() else { throw VaultError(.io, "the session bus connection broke") }
            if outcome.dismissed != nil { break }
            _ = connection.wait(orWake: -1, limit: try left(deadline))
        }
        if outcome.dismissed == true {
            throw VaultError(.vaultLocked, "the collection \(collection) of the Secret Service provider stayed locked (its prompt was dismissed)")
        }
    }

    private func property(_ connection: BusConnection, path: String, interface: String, name: String,
                          _ deadline: ContinuousClock.Instant) throws -> BusValue {
        let answer = try connection.call(destination: Self.service, path: path, interface: Interface.properties, member: "Get",
                                         arguments: [.string(interface), .string(name)], timeout: try left(deadline))
        guard let value = answer.first else { throw VaultError(.io, "the Secret Service provider gave no \(name)") }
        return value.unwrapped
    }

    private func allProperties(_ connection: BusConnection, path: String, interface: String,
                               _ deadline: ContinuousClock.Instant) throws -> [String: BusValue] {
        let answer = try connection.call(destination: Self.service, path: path, interface: Interface.properties, member: "GetAll",
                                         arguments: [.string(interface)], timeout: try left(deadline))
        return answer.first?.dictionary ?? [:]
    }

    /// The time left before `deadline`.
    /// - Throws: `VaultError` `.io` once it has passed.
    private func left(_ deadline: ContinuousClock.Instant) throws -> Duration {
        let left = deadline - .now
        guard left > .zero else { throw VaultError(.io, "the Secret Service provider did not answer within \(timeout)") }
        return left
    }

    private static func date(_ seconds: UInt64) -> Date {
        Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
