/// The object paths the provider serves, and what a path names.
///
/// `/org/freedesktop/secrets` is the service; `…/collection/ID` a collection and `…/collection/ID/NAME`
/// one of its items; `…/aliases/ALIAS` and `…/aliases/ALIAS/NAME` the same objects through an alias
/// (secretstorage calls `…/aliases/default` directly); `…/session/N` and `…/prompt/N` sessions and prompts.
enum SecretPaths {
    /// The service object.
    static let service = "/org/freedesktop/secrets"
    /// The folder of the collections.
    static let collections = service + "/collection"
    /// The folder of the aliases.
    static let aliases = service + "/aliases"
    /// The folder of the sessions.
    static let sessions = service + "/session"
    /// The folder of the prompts.
    static let prompts = service + "/prompt"
    /// "No object" (a method that needs no prompt answers this as its prompt).
    static let none = "/"

    /// A collection's path.
    static func collection(_ id: String) -> String { collections + "/" + id }

    /// An item's path.
    static func item(_ collectionID: String, _ name: String) -> String { collection(collectionID) + "/" + name }

    /// What a path names, aliases not yet resolved.
    enum Object: Equatable {
        case service
        /// A folder (collection, aliases, session, prompt), only introspected.
        case folder(String)
        case collection(String)
        case item(collection: String, name: String)
        case alias(String)
        case aliasItem(alias: String, name: String)
        case session(String)
        case prompt(String)
    }

    /// What `path` names; nil for a path outside the service or too deep.
    static func parse(_ path: String) -> Object? {
        if path == service { return .service }
        guard path.hasPrefix(service + "/") else { return nil }
        let parts = path.dropFirst(service.count + 1).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !parts.contains(where: \.isEmpty) else { return nil }
        switch (parts.first, parts.count) {
        case ("collection", 1), ("aliases", 1), ("session", 1), ("prompt", 1): return .folder(parts[0])
        case ("collection", 2): return .collection(parts[1])
        case ("collection", 3): return .item(collection: parts[1], name: parts[2])
        case ("aliases", 2): return .alias(parts[1])
        case ("aliases", 3): return .aliasItem(alias: parts[1], name: parts[2])
        case ("session", 2): return .session(path)
        case ("prompt", 2): return .prompt(path)
        default: return nil
        }
    }

    /// Whether `element` can be one element of an object path ([A-Za-z0-9_], not empty).
    static func isPathElement(_ element: String) -> Bool {
        !element.isEmpty && element.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
        }
    }
}
