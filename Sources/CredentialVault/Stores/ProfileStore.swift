import FoundationEssentials

/// Keeps the `Profile` in a plain JSON file: the `UserDefaults` of the vault, for data that
/// is NOT secret (tokens belong in the encrypted store).
///
/// Writes are atomic and durable (temporary file, fsync, rename, fsync of the directory)
/// and the file is 0600 in a 0700 directory. A file that exists but cannot be read or
/// parsed is an error with a reason, never an empty profile: treating it as empty would
/// silently sign the user out and mint a new anonymous id.
///
/// `update(_:)` serialises read-modify-write cycles across threads and processes with an
/// exclusive `flock` on a lock file beside the profile ("profile.lock" for
/// "profile.json"). Calls block the calling thread.
public final class ProfileStore: Sendable {
    /// Larger files are refused before parsing, as corrupt.
    public static let maximumFileSize = 1 << 20

    /// The directory holding the profile and its lock file.
    public let directory: String
    /// The profile's file name inside `directory`.
    public let fileName: String
    /// How long `update(_:)`, `save(_:)` and `remove()` wait for another holder of the lock.
    public let lockTimeout: Duration

    /// Creates a store; nothing is touched on disk until the first call.
    /// - Parameters:
    ///   - directory: the directory; created 0700 on the first write.
    ///   - fileName: a plain file name (no "/").
    ///   - lockTimeout: how long writers wait for the lock before failing with `.busy`.
    public init(directory: String, fileName: String = "profile.json", lockTimeout: Duration = .seconds(10)) {
        self.directory = directory
        self.fileName = fileName
        self.lockTimeout = lockTimeout
    }

    /// The profile file: `directory/fileName`.
    public var path: String { Self.join(directory, fileName) }

    /// The lock file: the file name with ".json" replaced by (or else followed by) ".lock".
    var lockPath: String {
        let stem = fileName.hasSuffix(".json") ? String(fileName.dropLast(5)) : fileName
        return Self.join(directory, stem + ".lock")
    }

    /// Reads the profile.
    /// - Returns: the profile, or nil when the file (or its directory) does not exist.
    /// - Throws: `VaultError` `.corrupt` when the file is not valid JSON, not an object, has
    ///   members of the wrong type or is larger than `maximumFileSize`;
    ///   `.unsupportedVersion` when it was written with a newer schema;
    ///   `.insecurePermissions` when it is a symlink or readable by others; `.io`.
    public func load() throws -> Profile? {
        try checkFileName()
        return try loadFile()
    }

    /// Replaces the profile on disk, under the lock. Prefer `update(_:)` for changes, so
    /// concurrent writers do not overwrite each other's work.
    /// - Parameter profile: the complete new profile.
    /// - Throws: `VaultError` `.invalidInput` when `schemaVersion` is not one this build
    ///   writes or the profile does not fit the format; `.busy` when the lock is not
    ///   granted in time; `.insecurePermissions`; `.io`.
    public func save(_ profile: Profile) throws {
        try checkFileName()
        let contents = try encode(profile)
        try SecureFileSystem.ensurePrivateDirectory(directory, create: true)
        let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: lockTimeout)
        defer { lock.release() }
        try SecureFileSystem.writeFileAtomically(path, contents: contents)
    }

    /// Reads, changes and writes the profile as one step, under an exclusive lock.
    ///
    /// `body` receives the stored profile, or an empty `Profile()` when there is none.
    /// The file is written only when `body` changed something; if `body` throws, nothing
    /// is written. A corrupt file makes this throw before `body` runs, so it is never
    /// overwritten by accident.
    /// - Parameter body: changes the profile and returns a result.
    /// - Returns: what `body` returned.
    /// - Throws: what `body` throws, or what `load()` and `save(_:)` throw.
    public func update<T>(_ body: (inout Profile) throws -> T) throws -> T {
        try checkFileName()
        try SecureFileSystem.ensurePrivateDirectory(directory, create: true)
        let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: lockTimeout)
        defer { lock.release() }
        SecureFileSystem.removeStaleTemporaryFiles(in: directory, for: fileName)
        let original = try loadFile() ?? Profile()
        var profile = original
        let result = try body(&profile)
        if profile != original {
            try SecureFileSystem.writeFileAtomically(path, contents: try encode(profile))
        }
        return result
    }

    /// Deletes the profile file, durably, under the lock; does nothing when it is missing.
    /// The lock file stays (see `FileLock`).
    /// - Throws: `VaultError` `.busy`, `.insecurePermissions`, `.io`.
    public func remove() throws {
        try checkFileName()
        guard SecureFileSystem.exists(directory) else { return }
        try SecureFileSystem.ensurePrivateDirectory(directory, create: false)
        let lock = try FileLock.acquire(path: lockPath, mode: .exclusive, timeout: lockTimeout)
        defer { lock.release() }
        try SecureFileSystem.removeFile(path, ignoreMissing: true)
    }

    // MARK: - Reading and writing

    private func loadFile() throws -> Profile? {
        let bytes: [UInt8]
        do {
            bytes = try SecureFileSystem.readPrivateFile(path, maxBytes: Self.maximumFileSize)
        } catch let error as VaultError where error.code == .notFound {
            return nil
        }
        return try Self.decode(bytes, path: path)
    }

    /// Parses a profile file's contents.
    static func decode(_ bytes: [UInt8], path: String) throws -> Profile {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw VaultError(.corrupt, "the profile is not valid JSON: \(error)", path: path, fix: restoreFix)
        }
        let document: JSONObjectReader
        do {
            document = try JSONObjectReader(value, path: "")
        } catch {
            throw VaultError(.corrupt, "the profile is \(value.kindDescription), not a JSON object", path: path,
                             fix: restoreFix)
        }
        let version: Int
        do {
            version = try Profile.schemaVersion(of: document)
        } catch {
            throw VaultError(.corrupt, "the profile is malformed: \(error)", path: path, fix: restoreFix)
        }
        guard version <= Profile.currentSchemaVersion else {
            throw VaultError(.unsupportedVersion,
                             "the profile has schema version \(version); this build reads up to version \(Profile.currentSchemaVersion)",
                             path: path, fix: "upgrade vault, or use the version that wrote this profile")
        }
        do {
            return try Profile(json: document)
        } catch {
            throw VaultError(.corrupt, "the profile is malformed: \(error)", path: path, fix: restoreFix)
        }
    }

    /// The bytes written: sorted keys, two-space indent, trailing newline.
    private func encode(_ profile: Profile) throws -> [UInt8] {
        guard (1...Profile.currentSchemaVersion).contains(profile.schemaVersion) else {
            throw VaultError(.invalidInput,
                             "cannot write profile schema version \(profile.schemaVersion); this build writes 1 through \(Profile.currentSchemaVersion)",
                             path: path)
        }
        let value: JSONValue
        do {
            value = try profile.jsonValue()
        } catch {
            throw VaultError(.invalidInput, "cannot write the profile: \(error)", path: path)
        }
        var bytes = try value.serialized(prettyPrinted: true)
        bytes.append(0x0A)
        guard bytes.count <= Self.maximumFileSize else {
            throw VaultError(.invalidInput,
                             "the profile would be \(bytes.count) bytes, more than the \(Self.maximumFileSize) allowed",
                             path: path, fix: "keep large data out of settings")
        }
        return bytes
    }

    private static let restoreFix = "fix the file by hand, restore it from a backup, or delete it to start over"

    private func checkFileName() throws {
        guard !fileName.isEmpty, fileName != ".", fileName != "..", !fileName.contains("/"),
              !fileName.utf8.contains(0)
        else {
            throw VaultError(.invalidInput, "the profile file name must be a plain file name", path: path)
        }
    }

    private static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }
}
