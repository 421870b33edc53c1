import Foundation

/// A private temporary folder, removed by `cleanUp()`.
struct TemporaryDirectory {
    let path: String

    init(_ label: String) throws {
        path = NSTemporaryDirectory() + "\(label)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: path) }
}

/// Locates an example program built next to the test bundle.
enum BuiltProducts {
    struct Missing: Error, CustomStringConvertible {
        let description: String
    }

    static func path(of name: String) throws -> String {
        var candidates: [URL] = []
        if let executable = Bundle.main.executableURL { candidates.append(executable.deletingLastPathComponent()) }
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for directory in candidates {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw Missing(description: "cannot find the built example \(name) near \(candidates.map(\.path))")
    }
}
