import Foundation
import Testing
import TestScheduling
@testable import CredentialVault
import VaultCrypto

/// Several processes on one vault, and writers killed with SIGKILL mid-write.
@Suite(.blockingWork) struct VaultProcessTests {
    /// Starts `VaultTestWorker` with `arguments`, collecting its stdout.
    final class Worker: @unchecked Sendable {
        // Safe: `output` is only touched under `lock`.
        let process = Process()
        private let pipe = Pipe()
        private let lock = NSLock()
        private var output = Data()
        private var reader: PipeReader?

        init(_ arguments: [String]) throws {
            process.executableURL = URL(fileURLWithPath: try BuiltProducts.path(of: "VaultTestWorker"))
            process.arguments = arguments
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            // Read by a thread of its own (PipeReader: a `readabilityHandler` can crash the test
            // process when several are torn down at once).
            reader = PipeReader(pipe.fileHandleForReading) { [self] chunk in
                lock.lock()
                output.append(chunk)
                lock.unlock()
            }
        }

        /// Lines printed so far.
        var lines: [String] {
            lock.lock()
            defer { lock.unlock() }
            return String(decoding: output, as: UTF8.self).split(separator: "\n").map(String.init)
        }

        /// Waits, polling every millisecond for at most `timeout`, until the worker has printed
        /// a line starting with `prefix`; false if it exited or the time ran out first.
        func waitForLine(startingWith prefix: String, timeout: Duration) -> Bool {
            let clock = ContinuousClock()
            let deadline = clock.now.advanced(by: timeout)
            while clock.now < deadline {
                if lines.contains(where: { $0.hasPrefix(prefix) }) { return true }
                guard process.isRunning else { break }
                usleep(1_000)
            }
            // The last lines may have arrived with the exit.
            return lines.contains { $0.hasPrefix(prefix) }
        }

        func waitAndDrain() -> [String] {
            process.waitUntilExit()
            // The reader reaches the end once the worker is gone (bounded: nothing else holds the pipe).
            _ = reader?.waitUntilFinished()
            return lines
        }
    }

    static func makeVault(_ temp: TemporaryDirectory) throws -> (directory: String, keyPath: String) {
        let keyPath = try Fixtures.privateCopy("keys/alice.key", into: temp)
        _ = try SecretStore.create(in: temp.child("v"), key: VaultKey.fromKeyFile(path: keyPath), options: .testing())
        return (temp.child("v"), keyPath)
    }

    @Test func concurrentProcessesKeepEveryEntry() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let (directory, keyPath) = try Self.makeVault(temp)
        let perWorker = 25
        let workers = try (0..<4).map { try Worker(["add", directory, keyPath, "w\($0)", "\(perWorker)"]) }
        var acknowledged = 0
        for worker in workers {
            acknowledged += worker.waitAndDrain().filter { $0.hasPrefix("ok ") }.count
            #expect(worker.process.terminationStatus == 0)
        }
        let store = try SecretStore.open(in: directory, key: VaultKey.fromKeyFile(path: keyPath), options: .testing())
        let names = Set(try store.list().map(\.name))
        #expect(acknowledged == 4 * perWorker)
        #expect(names.count == 4 * perWorker)
        for worker in 0..<4 {
            for index in 0..<perWorker {
                #expect(names.contains("w\(worker)-\(index)"))
            }
        }
        #expect(try store.verify().isIntact)
    }

    @Test func writersKilledMidWriteLoseNothingAcknowledged() throws {
        let temp = try TemporaryDirectory()
        defer { temp.cleanUp() }
        let (directory, keyPath) = try Self.makeVault(temp)
        let key = try VaultKey.fromKeyFile(path: keyPath)
        let iterations = ProcessInfo.processInfo.environment["VAULT_CRASH_ITERATIONS"].flatMap(Int.init) ?? 40
        var acknowledged = Set<String>()
        var kills = 0
        var generator = SystemRandomNumberGenerator()
        for iteration in 0..<iterations {
            let worker = try Worker(["add", directory, keyPath, "i\(iteration)", "100000"])
            // The delay counts from the first acknowledged write, not from the spawn: start-up
            // (slow on a loaded machine or under a sanitizer) must not eat it, so every kill
            // lands while the worker is writing.
            let writing = worker.waitForLine(startingWith: "ok ", timeout: .seconds(60))
            #expect(writing, "iteration \(iteration): the worker acknowledged no write within 60 s")
            usleep(UInt32.random(in: 0...30_000, using: &generator))
            kill(worker.process.processIdentifier, SIGKILL)
            let lines = worker.waitAndDrain()
            #expect(worker.process.terminationReason == .uncaughtSignal && worker.process.terminationStatus == SIGKILL,
                    "iteration \(iteration): the worker was killed mid-write, not finished or failed")
            kills += 1
            var acknowledgedNow = 0
            for line in lines where line.hasPrefix("ok ") {
                acknowledged.insert(String(line.dropFirst(3)))
                acknowledgedNow += 1
            }
            #expect(acknowledgedNow > 0, "iteration \(iteration) acknowledged nothing before the kill")
            // After every kill the vault opens and holds every acknowledged write.
            let store = try SecretStore.open(in: directory, key: key, options: .testing())
            let names = Set(try store.list().map(\.name))
            #expect(acknowledged.isSubset(of: names), "iteration \(iteration) lost \(acknowledged.subtracting(names).count) writes")
        }
        // The next writer removes any temp file a killed writer left behind.
        let store = try SecretStore.open(in: directory, key: key, options: .testing())
        try store.put(NewEntry(name: "after-crashes", secret: secret("x")))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp.") }
        #expect(leftovers.isEmpty, "temp files left: \(leftovers)")
        #expect(try store.verify().isIntact)
        print("crash safety: \(iterations) iterations, \(kills) SIGKILLs, \(acknowledged.count) acknowledged writes, 0 lost")
        #expect(acknowledged.count > 0)
    }
}
