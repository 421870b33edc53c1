import CredentialVault
import VaultCLI

/// org.freedesktop.Secret.Service on /org/freedesktop/secrets, and the Session interface.
extension SecretServiceProvider {
    func serviceMethod(_ call: Call) throws -> Answer {
        switch call.member {
        case "OpenSession":
            let arguments = try call.expect("sv")
            let (output, path) = try openSession(algorithm: arguments[0].stringValue ?? "", input: arguments[1], for: call)
            return Answer(values: [.variant(output), .objectPath(path)])
        case "SearchItems":
            let arguments = try call.expect("a{ss}")
            let query = arguments[0].stringDictionaryValue ?? [:]
            var unlocked: [String] = [], locked: [String] = []
            for collection in allCollections {
                let (records, isLocked) = try listedRecords(collection, call)
                let found = records.filter { $0.matches(query) }.map { SecretPaths.item(collection.id, $0.name) }.sorted()
                if isLocked || self.isLocked(collection) { locked += found } else { unlocked += found }
            }
            return Answer(values: [.paths(unlocked), .paths(locked)])
        case "Unlock":
            let paths = try call.expect("ao")[0].objectPaths ?? []
            var unlocked: [String] = [], waiting: [String] = []
            for path in paths {
                guard let collection = try? collectionOrItemCollection(path) else { continue }
                if isLocked(collection) { waiting.append(path) } else { unlocked.append(path) }
            }
            guard !waiting.isEmpty else { return Answer(values: [.paths(unlocked), .objectPath(SecretPaths.none)]) }
            return Answer(values: [.paths(unlocked), .objectPath(try makePrompt(unlocking: waiting, for: call))])
        case "Lock":
            let paths = try call.expect("ao")[0].objectPaths ?? []
            // Locking is not bound to an item, but an unidentified caller is refused when there are rules.
            _ = try access(call)
            var locked: [String] = []
            for path in paths {
                guard case .vault = try? collectionOrItemCollection(path) else { continue }
                locked.append(path)
            }
            if !locked.isEmpty {
                // Only the vault this provider serves: the other vaults the agent holds stay unlocked.
                setup.handler.lock(directory: setup.directory)
                setup.log("locked through the Secret Service by \(call.caller.description)")
                emit(SecretPaths.service, Interface.service, "CollectionChanged", [.objectPath(SecretPaths.collection(VaultCollection.id))])
            }
            return Answer(values: [.paths(locked), .objectPath(SecretPaths.none)])
        case "GetSecrets":
            let arguments = try call.expect("aoo")
            let session = try self.session(arguments[1].objectPathValue ?? "", for: call)
            var secrets: [BusValue] = []
            for path in arguments[0].objectPaths ?? [] {
                // Skipped: no such item (or one the caller may not list) and locked items, as the
                // specification says; a refusal or unusable rules are the caller's error.
                let collection: Collection, record: SecretItemRecord
                do {
                    let (found, name) = try item(atPath: path)
                    guard !isLocked(found) else { continue }
                    (collection, record) = (found, try self.record(found, name, call))
                } catch let error as BusError where error.name == BusError.noSuchObject("").name {
                    continue
                }
                let secret = try secretOf(collection, record, call)
                secrets.append(.dictionaryEntry(.objectPath(path), try session.encode(secret, contentType: record.contentType)))
            }
            return Answer(values: [.array(element: "{o(oayays)}", secrets)], sensitive: true)
        case "ReadAlias":
            let alias = try call.expect("s")[0].stringValue ?? ""
            guard let id = aliases[alias], (try? collection(id: id)) != nil else { return Answer(values: [.objectPath(SecretPaths.none)]) }
            return Answer(values: [.objectPath(SecretPaths.collection(id))])
        case "SetAlias":
            let arguments = try call.expect("so")
            let alias = arguments[0].stringValue ?? "", target = arguments[1].objectPathValue ?? ""
            guard SecretPaths.isPathElement(alias) else { throw BusError.invalidArguments("an alias is letters, digits and _") }
            guard !Self.fixedAliases.contains(alias) else {
                throw BusError.notSupported("the alias \(alias) is fixed: default and login name the agent's vault "
                                            + "(\(setup.directory)), session the in-memory session collection")
            }
            if target == SecretPaths.none {
                guard let current = aliases[alias] else { return Answer() }
                try checkCollectionChange(.add, current, call)
                aliases[alias] = nil
            } else {
                guard let object = SecretPaths.parse(target) else { throw BusError.noSuchObject(target) }
                let id = try collection(for: object).id
                try checkCollectionChange(.add, id, call)
                guard aliases[alias] != nil || aliases.count < Self.maximumAliases else {
                    throw BusError.failed("the agent holds the maximum of \(Self.maximumAliases) aliases: remove one first")
                }
                aliases[alias] = id
            }
            return Answer()
        case "CreateCollection":
            let arguments = try call.expect("a{sv}s")
            let properties = arguments[0].dictionary ?? [:]
            let alias = arguments[1].stringValue ?? ""
            if !alias.isEmpty, let id = aliases[alias], (try? collection(id: id)) != nil {
                return Answer(values: [.objectPath(SecretPaths.collection(id)), .objectPath(SecretPaths.none)])
            }
            guard alias.isEmpty || SecretPaths.isPathElement(alias) else { throw BusError.invalidArguments("an alias is letters, digits and _") }
            let label = properties["\(Interface.collection).Label"]?.unwrapped.stringValue ?? ""
            guard (try? EntryValidation.checkLabel(label)) != nil else {
                throw BusError.invalidArguments("a collection's label is at most \(VaultLimits.maximumLabelBytes) bytes, without control characters")
            }
            guard alias.isEmpty || aliases.count < Self.maximumAliases else {
                throw BusError.failed("the agent holds the maximum of \(Self.maximumAliases) aliases: remove one first")
            }
            let id = try newCollectionID(label: label)
            try checkCollectionChange(.add, id, call)
            memory[id] = MemoryCollection(id: id, label: label)
            if !alias.isEmpty { aliases[alias] = id }
            let path = SecretPaths.collection(id)
            return Answer(values: [.objectPath(path), .objectPath(SecretPaths.none)]) { [self] in
                emit(SecretPaths.service, Interface.service, "CollectionCreated", [.objectPath(path)])
            }
        default:
            throw BusError.unknownMethod(Interface.service, call.member)
        }
    }

    /// The most in-memory collections.
    static let maximumCollections = 64

    private func newCollectionID(label: String) throws -> String {
        guard memory.count < Self.maximumCollections else { throw BusError.failed("too many collections") }
        let base = String(label.lowercased().map { character -> Character in
            SecretPaths.isPathElement(String(character)) ? character : "_"
        }.prefix(32))
        let stem = base.isEmpty ? "collection" : base
        var id = stem
        var counter = 1
        while id == VaultCollection.id || memory[id] != nil {
            counter += 1
            id = "\(stem)_\(counter)"
        }
        return id
    }

    /// The collection a collection path, alias path or item path belongs to.
    func collectionOrItemCollection(_ path: String) throws -> Collection {
        guard let object = SecretPaths.parse(path) else { throw BusError.noSuchObject(path) }
        switch object {
        case .collection, .alias: return try collection(for: object)
        case .item, .aliasItem: return try item(for: object).0
        default: throw BusError.noSuchObject(path)
        }
    }

    /// An item's secret, under the caller's rules.
    func secretOf(_ collection: Collection, _ record: SecretItemRecord, _ call: Call) throws -> SecureBytes {
        let access = try access(call, records: [record])
        switch collection {
        case let .vault(vault):
            return try vault.secret(record.name, access: access)
        case let .memory(memory):
            try access.check(.get, entry: (record.name, VaultCollection.owner))
            guard let stored = memory.items[record.name] else { throw BusError.noSuchObject(SecretPaths.item(memory.id, record.name)) }
            return stored.secret
        }
    }

    func sessionMethod(_ call: Call, path: String) throws -> Answer {
        guard call.member == "Close" else { throw BusError.unknownMethod(Interface.session, call.member) }
        _ = try call.expect("")
        guard let session = sessions[path] else { throw BusError.noSuchObject(path) }
        guard session.owner == call.sender else { throw BusError.accessDenied("the session \(path) belongs to another connection") }
        sessions[path] = nil
        return Answer()
    }
}
