import CredentialVault
import VaultCLI

/// org.freedesktop.DBus.Properties (Get, GetAll, Set) and Introspectable for every object.
extension SecretServiceProvider {
    func properties(_ call: Call, object: SecretPaths.Object) throws -> Answer {
        switch call.member {
        case "Get":
            let arguments = try call.expect("ss")
            let interface = arguments[0].stringValue ?? "", name = arguments[1].stringValue ?? ""
            let all = try propertyValues(object, interface: interface, call)
            guard let value = all[name] else { throw BusError.unknownProperty(interface, name) }
            return Answer(values: [.variant(value)])
        case "GetAll":
            let interface = try call.expect("s")[0].stringValue ?? ""
            return Answer(values: [.properties(try propertyValues(object, interface: interface, call))])
        case "Set":
            let arguments = try call.expect("ssv")
            return try setProperty(object, interface: arguments[0].stringValue ?? "", name: arguments[1].stringValue ?? "",
                                   value: arguments[2].unwrapped, call)
        default:
            throw BusError.unknownMethod(Interface.properties, call.member)
        }
    }

    /// Every property of an object's interface ("" for its own).
    private func propertyValues(_ object: SecretPaths.Object, interface: String, _ call: Call) throws -> [String: BusValue] {
        switch object {
        case .service:
            guard interface.isEmpty || interface == Interface.service else { return [:] }
            return ["Collections": .paths(allCollections.map(\.path))]
        case .collection, .alias:
            guard interface.isEmpty || interface == Interface.collection else { return [:] }
            let collection = try collection(for: object)
            let items = try listedRecords(collection, call).records.map { SecretPaths.item(collection.id, $0.name) }.sorted()
            let (label, created, modified): (String, UInt64, UInt64) = switch collection {
            case let .vault(vault): (vault.label, vault.created, vault.modified)
            case let .memory(memory): (memory.label, memory.created, memory.modified)
            }
            return ["Items": .paths(items), "Label": .string(label), "Locked": .boolean(isLocked(collection)),
                    "Created": .uint64(created), "Modified": .uint64(modified)]
        case .item, .aliasItem:
            guard interface.isEmpty || interface == Interface.item else { return [:] }
            let (collection, name) = try item(for: object)
            let record = try record(collection, name, call)
            return ["Locked": .boolean(isLocked(collection)), "Attributes": .stringDictionary(record.attributes),
                    "Label": .string(record.label), "Created": .uint64(record.created), "Modified": .uint64(record.modified)]
        case .session, .prompt, .folder:
            return [:]
        }
    }

    private func setProperty(_ object: SecretPaths.Object, interface: String, name: String, value: BusValue, _ call: Call) throws -> Answer {
        switch object {
        case .collection, .alias:
            guard interface == Interface.collection, name == "Label" else { throw BusError.readOnly(name) }
            guard let label = value.stringValue else { throw BusError.invalidArguments("Label is a string") }
            guard (try? EntryValidation.checkLabel(label)) != nil else {
                throw BusError.invalidArguments("a collection's label is at most \(VaultLimits.maximumLabelBytes) bytes, without control characters")
            }
            let collection = try collection(for: object)
            try checkCollectionChange(.add, collection.id, call)
            switch collection {
            case let .vault(vault): vault.label = label
            case let .memory(memory): memory.label = label
            }
            return Answer { [self] in
                emit(SecretPaths.service, Interface.service, "CollectionChanged", [.objectPath(collection.path)])
                emit(collection.path, Interface.properties, "PropertiesChanged",
                     [.string(Interface.collection), .properties([:]), .array(element: "s", [.string("Label")])])
            }
        case .item, .aliasItem:
            guard interface == Interface.item, name == "Label" || name == "Attributes" else { throw BusError.readOnly(name) }
            let (collection, itemName) = try item(for: object)
            var record = try record(collection, itemName, call)
            if name == "Label" {
                guard let label = value.stringValue else { throw BusError.invalidArguments("Label is a string") }
                record.label = label
            } else {
                guard let attributes = value.stringDictionaryValue else { throw BusError.invalidArguments("Attributes are a{ss}") }
                record.attributes = SecretItemRecord.visible(attributes)
            }
            try rewrite(collection, record, secret: nil, call)
            let path = SecretPaths.item(collection.id, itemName)
            // Never the new value: every bus listener receives signals, whatever the rules let it read;
            // the name is invalidated and clients read it again through the rules.
            return Answer { [self] in
                emit(path, Interface.properties, "PropertiesChanged",
                     [.string(Interface.item), .properties([:]), .array(element: "s", [.string(name)])])
                emit(collection.path, Interface.collection, "ItemChanged", [.objectPath(path)])
            }
        default:
            throw BusError.readOnly(name)
        }
    }

    /// The introspection document of an object, with its children.
    func introspect(_ object: SecretPaths.Object, _ call: Call) throws -> String {
        switch object {
        case .service:
            return SecretIntrospection.document(interface: SecretIntrospection.service,
                                                children: ["collection", "aliases", "session", "prompt"])
        case .folder("collection"):
            return SecretIntrospection.document(interface: nil, children: allCollections.map(\.id))
        case .folder("aliases"):
            return SecretIntrospection.document(interface: nil, children: Array(aliases.keys))
        case .folder("session"):
            return SecretIntrospection.document(interface: nil, children: sessions.keys.map { String($0.split(separator: "/").last ?? "") })
        case .folder("prompt"):
            return SecretIntrospection.document(interface: nil, children: prompts.keys.map { String($0.split(separator: "/").last ?? "") })
        case .folder:
            throw BusError.noSuchObject("no such folder")
        case .collection, .alias:
            let collection = try collection(for: object)
            // The items the caller may list (a locked vault's remembered ones; none before it was read).
            // A locked vault never read has no known children; a refusal (unusable rules, an
            // unidentified caller) is the caller's error, not an empty collection.
            let children: [String]
            do {
                children = try listedRecords(collection, call).records.map(\.name)
            } catch let error as BusError where error.name == BusError.isLocked("").name {
                children = []
            }
            return SecretIntrospection.document(interface: SecretIntrospection.collection, children: children)
        case .item, .aliasItem:
            return SecretIntrospection.document(interface: SecretIntrospection.item, children: [])
        case let .session(path):
            guard sessions[path] != nil else { throw BusError.noSuchObject(path) }
            return SecretIntrospection.document(interface: SecretIntrospection.session, children: [])
        case let .prompt(path):
            guard prompts[path] != nil else { throw BusError.noSuchObject(path) }
            return SecretIntrospection.document(interface: SecretIntrospection.prompt, children: [])
        }
    }
}
