import CredentialVault
import VaultCLI

/// org.freedesktop.Secret.Collection on /org/freedesktop/secrets/collection/ID (and its aliases).
extension SecretServiceProvider {
    func collectionMethod(_ call: Call, collection: Collection) throws -> Answer {
        switch call.member {
        case "SearchItems":
            let query = try call.expect("a{ss}")[0].stringDictionaryValue ?? [:]
            let found = try listedRecords(collection, call).records.filter { $0.matches(query) }
            return Answer(values: [.paths(found.map { SecretPaths.item(collection.id, $0.name) }.sorted())])
        case "CreateItem":
            let arguments = try call.expect("a{sv}(oayays)b")
            return try createItem(call, collection: collection, properties: arguments[0].dictionary ?? [:], secret: arguments[1],
                                  replace: arguments[2].booleanValue ?? false)
        case "Delete":
            _ = try call.expect("")
            guard case let .memory(memoryCollection) = collection, memoryCollection.id != "session" else {
                throw BusError.notSupported("the collection \(collection.id) cannot be deleted: it is "
                                            + (collection.id == "session" ? "the session collection" : "the agent's vault (\(setup.directory))"))
            }
            try checkCollectionChange(.remove, memoryCollection.id, call)
            memory[memoryCollection.id] = nil
            aliases = aliases.filter { $0.value != memoryCollection.id }
            return Answer(values: [.objectPath(SecretPaths.none)]) { [self] in
                emit(SecretPaths.service, Interface.service, "CollectionDeleted", [.objectPath(collection.path)])
            }
        default:
            throw BusError.unknownMethod(Interface.collection, call.member)
        }
    }

    /// The secret a Secret struct (`(oayays)`) carries, decoded with the caller's own session.
    func decodeSecret(_ value: BusValue, _ call: Call) throws -> (secret: SecureBytes, contentType: String) {
        guard case let .structure(members) = value, members.count == 4, let sessionPath = members[0].objectPathValue,
              case let .bytes(parameters) = members[1], case let .bytes(secret) = members[2], let contentType = members[3].stringValue else {
            throw BusError.invalidArguments("a secret is (session, parameters, value, content type)")
        }
        let session = try self.session(sessionPath, for: call)
        guard secret.count <= VaultLimits.maximumSecretBytes + 32 else { throw BusError.invalidArguments("the secret is too large") }
        return (try session.decode(parameters: parameters, value: secret), contentType.isEmpty ? SecretItemRecord.defaultContentType : contentType)
    }

    private func createItem(_ call: Call, collection: Collection, properties: [String: BusValue], secret: BusValue, replace: Bool) throws -> Answer {
        let (value, contentType) = try decodeSecret(secret, call)
        let label = properties["\(Interface.item).Label"]?.unwrapped.stringValue ?? ""
        var attributes: [String: String] = [:]
        if let given = properties["\(Interface.item).Attributes"] {
            guard let dictionary = given.unwrapped.stringDictionaryValue else {
                throw BusError.invalidArguments("an item's Attributes are a{ss}")
            }
            attributes = SecretItemRecord.visible(dictionary)
        }
        if isLocked(collection) {
            throw BusError.isLocked("the vault \(setup.directory) is locked: unlock it (Unlock, or 'vault unlock' in a terminal)")
        }
        try refuseLookAlike(of: attributes, in: collection, call)
        // With replace, the item with exactly these attributes is replaced (the specification's rule).
        let existing = replace ? try listedRecords(collection, call).records.first { $0.attributes == attributes } : nil
        let now = SecretItemRecord.now
        let record = SecretItemRecord(name: try existing?.name ?? newItemName(), label: label, attributes: attributes, contentType: contentType,
                                      created: existing?.created ?? now, modified: now)
        try Self.checkLimits(record)
        let access = try access(call, records: [record])
        switch collection {
        case let .vault(vault):
            try vault.put(record, secret: value, replace: existing != nil, access: access)
        case let .memory(memory):
            try access.check(.add, entry: (record.name, VaultCollection.owner))
            try putInMemory(memory, record, secret: value)
        }
        let path = SecretPaths.item(collection.id, record.name)
        return Answer(values: [.objectPath(path), .objectPath(SecretPaths.none)]) { [self] in
            emit(collection.path, Interface.collection, existing == nil ? "ItemCreated" : "ItemChanged", [.objectPath(path)])
            if existing == nil { itemsChanged(collection) }
        }
    }

    /// Refuses a new item whose attributes are exactly those of an item the caller may not list
    /// (with or without replace): it would be a look-alike that other programs' lookups return in
    /// place of (or beside) the hidden one. The refusal names the rule that hides it.
    private func refuseLookAlike(of attributes: [String: String], in collection: Collection, _ call: Call) throws {
        let all: [SecretItemRecord] = switch collection {
        case let .vault(vault): try vault.records().records
        case let .memory(memory): memory.items.values.map(\.record)
        }
        let access = try access(call)
        guard let hidden = all.first(where: {
            $0.attributes == attributes && !access.mayList(name: $0.name, owner: VaultCollection.owner, attributes: $0.attributes)
        }) else { return }
        do {
            try self.access(call, records: [hidden]).check(.list, entry: (hidden.name, VaultCollection.owner))
        } catch let error as VaultError {
            throw BusError.accessDenied("an item with exactly these attributes exists and is hidden from this caller, "
                                        + "so a new one is refused: \(error.message)")
        }
    }

    /// Tells long-lived clients that a collection's Items changed (PropertiesChanged, Items invalidated).
    func itemsChanged(_ collection: Collection) {
        emit(collection.path, Interface.properties, "PropertiesChanged",
             [.string(Interface.collection), .properties([:]), .array(element: "s", [.string("Items")])])
    }
}
