import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

/// A fresh private temporary directory for one test, removed by `cleanUp()`.
struct TemporaryDirectory {
    let path: String

    init(_ label: String = "vault-test") throws {
        let base = NSTemporaryDirectory() + "\(label)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        path = base
    }

    func child(_ name: String) -> String { (path as NSString).appendingPathComponent(name) }

    func cleanUp() { try? FileManager.default.removeItem(atPath: path) }
}

/// Committed fixtures: keys, passphrases, golden vaults. They never change.
enum Fixtures {
    static var root: URL {
        get throws {
            try #require(Bundle.module.url(forResource: "Fixtures", withExtension: nil), "fixtures are bundled")
        }
    }

    static func data(_ relativePath: String) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent(relativePath))
    }

    /// Copies a fixture into `directory` with mode 0600 (git does not keep modes) and returns its path.
    static func privateCopy(_ relativePath: String, into directory: TemporaryDirectory, as name: String? = nil) throws -> String {
        let destination = directory.child(name ?? (relativePath as NSString).lastPathComponent)
        FileManager.default.createFile(atPath: destination, contents: try data(relativePath),
                                       attributes: [.posixPermissions: 0o600])
        return destination
    }

    static func keyFile(_ name: String, in directory: TemporaryDirectory) throws -> VaultKey {
        try VaultKey.fromKeyFile(path: privateCopy("keys/\(name)", into: directory))
    }

    static func passphrase() throws -> VaultKey {
        let text = String(decoding: try data("keys/alice.passphrase"), as: UTF8.self)
            .trimmingCharacters(in: .newlines)
        return .passphrase(SecureBytes(copying: Array(text.utf8)))
    }
}

extension SecretStore.Options {
    /// Options for tests: the fast `testing` KDF policy, a short lock timeout, a fixed clock, no rollback memory.
    static func testing(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) -> SecretStore.Options {
        var options = SecretStore.Options(lockTimeout: .seconds(5), clock: { now })
        options.kdfPolicy = .testing
        options.rollbackMemory = .disabled   // tests of the memory pass their own directory
        return options
    }
}

/// Bytes of a string, for secrets in tests.
func secret(_ text: String) -> SecureBytes { SecureBytes(copying: Array(text.utf8)) }

/// Expects `body` to throw a `VaultError` with `code`; returns it.
@discardableResult
func expectVaultError<T>(_ code: VaultError.Code, sourceLocation: SourceLocation = #_sourceLocation,
                         _ body: () throws -> T) -> VaultError? {
    do {
        _ = try body()
        Issue.record("expected VaultError \(code), but nothing was thrown", sourceLocation: sourceLocation)
        return nil
    } catch let error as VaultError {
        #expect(error.code == code, "expected \(code), got \(error.code): \(error)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected VaultError \(code), got \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Locates an executable built next to the test bundle (e.g. `VaultTestWorker`, `vault`).
enum BuiltProducts {
    static func path(of name: String) throws -> String {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for directory in candidates {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw TestFailure("cannot find the built product \(name) near \(candidates.map(\.path))")
    }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
