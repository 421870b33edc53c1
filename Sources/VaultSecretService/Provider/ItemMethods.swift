import CredentialVault
import VaultCLI

/// org.freedesktop.Secret.Item on /org/freedesktop/secrets/collection/ID/NAME (and through aliases).
extension SecretServiceProvider {
    func itemMethod(_ call: Call, collection: Collection, name: String) throws -> Answer {
        switch call.member {
        case "GetSecret":
            let sessionPath = try call.expect("o")[0].objectPathValue ?? ""
            let session = try self.session(sessionPath, for: call)
            let record = try record(collection, name, call)
            let secret = try secretOf(collection, record, call)
            return Answer(values: [try session.encode(secret, contentType: record.contentType)], sensitive: true)
        case "SetSecret":
            let (secret, contentType) = try decodeSecret(try call.expect("(oayays)")[0], call)
            var record = try record(collection, name, call)
            record.contentType = contentType
            try rewrite(collection, record, secret: secret, call)
            return changed(collection, name)
        case "Delete":
            _ = try call.expect("")
            let record = try record(collection, name, call)
            let access = try access(call, records: [record])
            switch collection {
            case let .vault(vault):
                try vault.remove(name, access: access)
            case let .memory(memory):
                try access.check(.remove, entry: (name, VaultCollection.owner))
                memory.remove(name)
            }
            let path = SecretPaths.item(collection.id, name)
            return Answer(values: [.objectPath(SecretPaths.none)]) { [self] in
                emit(collection.path, Interface.collection, "ItemDeleted", [.objectPath(path)])
                itemsChanged(collection)
            }
        default:
            throw BusError.unknownMethod(Interface.item, call.member)
        }
    }

    /// Stores an item again with a changed record (label, attributes) and, when given, a new secret.
    /// A vault item is rewritten whole, so a change of label or attributes reads its secret first
    /// (the caller needs both `get` and `add` from the rules).
    func rewrite(_ collection: Collection, _ record: SecretItemRecord, secret: SecureBytes?, _ call: Call) throws {
        if isLocked(collection) {
            throw BusError.isLocked("the vault \(setup.directory) is locked: unlock it (Unlock, or 'vault unlock' in a terminal)")
        }
        let value = try secret ?? secretOf(collection, record, call)
        var updated = record
        updated.modified = SecretItemRecord.now
        try Self.checkLimits(updated)
        let access = try access(call, records: [updated])
        switch collection {
        case let .vault(vault):
            try vault.put(updated, secret: value, replace: true, access: access)
        case let .memory(memory):
            try access.check(.add, entry: (record.name, VaultCollection.owner))
            try putInMemory(memory, updated, secret: value)
        }
    }

    /// The answer to a change of an item: nothing, then ItemChanged.
    func changed(_ collection: Collection, _ name: String) -> Answer {
        let path = SecretPaths.item(collection.id, name)
        return Answer { [self] in
            emit(collection.path, Interface.collection, "ItemChanged", [.objectPath(path)])
        }
    }
}
