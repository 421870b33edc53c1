import Foundation
import Logging
import Testing
@testable import CredentialVault
import VaultCrypto

/// Everything the session and the store log, at the most verbose level, holds no secret.
@Suite struct LoggingHygieneTests {
    final class Capture: @unchecked Sendable {
        // Safe: `lines` is only touched under `lock`.
        private let lock = NSLock()
        private var lines: [String] = []
        func add(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
    }

    struct CapturingHandler: LogHandler {
        let capture: Capture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(level: Logger.Level, message: Logger.Message, metadata explicit: Logger.Metadata?,
                 source: String, file: String, function: String, line: UInt) {
            let all = metadata.merging(explicit ?? [:]) { $1 }
            capture.add("\(level) \(message) \(all.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))")
        }
    }

    @Test func sessionLifecycleLogsNoSecretAtTraceLevel() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let capture = Capture()
        let clock = fixture.clock
        var configuration = SessionConfiguration(clock: { clock.now },
                                                 logger: Logger(label: "test") { _ in CapturingHandler(capture: capture) })
        configuration.kdfPolicy = .testing
        configuration.rollbackMemory = .disabled
        let session = SessionManager(directory: fixture.directory, key: try fixture.key(), configuration: configuration)
        _ = await session.restore()
        try await session.saveItem(NewEntry(name: "cart", secret: secret("guest-item-secret-77")))
        try await session.signIn(user: User(id: "u1"), credentials: Credentials(
            accessToken: secret("access-token-secret-11"), refreshToken: secret("refresh-token-secret-22"),
            expiresAt: clock.now.addingTimeInterval(10)))
        _ = try await session.validCredentials { _ in
            Credentials(accessToken: secret("access-token-secret-33"), expiresAt: clock.now.addingTimeInterval(3600))
        }
        try await session.signOut()
        let lines = capture.all
        #expect(lines.count >= 4, "expected the lifecycle to be logged: \(lines)")
        for line in lines {
            for fragment in ["secret-11", "secret-22", "secret-33", "secret-77"] {
                #expect(!line.contains(fragment), "a log line holds a secret: \(line)")
            }
        }
    }
}
