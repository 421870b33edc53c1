// A small worker process for the crash, concurrency and stress tests: it drives a
// vault from another process and acknowledges each committed write on stdout,
// so a parent that kills it at a random moment knows which writes must survive.
//
// `mixed` runs random add / get / rm / rotate / passwd (a key change to the same key file)
// until SECONDS have passed. It prints "begin add NAME" / "begin rm NAME" before those
// writes and "ok add NAME", "ok get NAME", "ok rm NAME", "ok rotate", "ok passwd" after
// each commits, so a killed worker's one unfinished write is known (scripts/stress).
// `signin` prints "begin signin" once its restore is done, just before the sign-in, and
// "ok signin" once it committed, so a parent can kill it mid-migration.
// `verify` authenticates every secret, checks that each is "secret-NAME", and prints
// "entry NAME" per entry, then "ok verify ENTRIES GENERATION".
//
// Usage:
//   VaultTestWorker create DIR KEY_FILE - 0
//   VaultTestWorker add DIR KEY_FILE PREFIX COUNT
//   VaultTestWorker mixed DIR KEY_FILE PREFIX SECONDS
//   VaultTestWorker verify DIR KEY_FILE - 0
//   VaultTestWorker signin DIR KEY_FILE USER_ID 0
//   VaultTestWorker refresh DIR KEY_FILE COUNTER_FILE DELAY_MS
//   VaultTestWorker pool-ticks DIR - - UNLOCKS
//
// `pool-ticks` creates a passphrase vault at the standard scrypt cost, opens it from UNLOCKS
// sessions at once while a task ticks every 5 ms, and prints "ticks N of M" (M: the ticks
// that fit in the time taken). In a process of its own, so the test runner's other tests do
// not share the cooperative pool being measured.
import CredentialVault
import Foundation
import VaultCrypto

/// Writes one acknowledgement line straight to the pipe (no buffering to lose on SIGKILL).
func acknowledge(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

let arguments = CommandLine.arguments
guard arguments.count >= 6 else { fail("usage: VaultTestWorker add|mixed DIR KEY_FILE PREFIX N [SEED]") }
let (command, directory, keyFile, prefix) = (arguments[1], arguments[2], arguments[3], arguments[4])
// The rollback memory of the stores below (`RollbackMemory.standard`) goes next to the test's
// vault folder, in its temporary directory, not into the developer's ~/.local/state.
setenv("XDG_STATE_HOME", PathText.joining(PathText.parent(of: directory), "state"), 0)
guard let number = Int(arguments[5]) else { fail("N must be a number") }

do {
    if command == "create" {
        _ = try SecretStore.create(in: directory, key: VaultKey.fromKeyFile(path: keyFile))
        exit(0)
    }
    if command == "pool-ticks" {
        try await measurePoolTicks(directory: directory, unlocks: number)
        exit(0)
    }
    if command == "signin" || command == "refresh" {
        try await runSessionCommand(command, directory: directory, key: VaultKey.fromKeyFile(path: keyFile),
                                    argument: prefix, number: number)
        exit(0)
    }
    let store = try SecretStore.open(in: directory, key: VaultKey.fromKeyFile(path: keyFile),
                                     options: .init(lockTimeout: .seconds(30)))
    switch command {
    case "add":
        for index in 0..<number {
            let name = "\(prefix)-\(index)"
            try store.put(NewEntry(name: name, secret: SecureBytes(copying: Array("secret-\(name)".utf8)), kind: .accessToken))
            acknowledge("ok \(name)")
        }
    case "mixed":
        var generator = SystemRandomNumberGenerator()
        let deadline = Date().addingTimeInterval(TimeInterval(number))
        var index = 0
        var live: [String] = []
        while Date() < deadline {
            let roll = Int.random(in: 0..<100, using: &generator)
            if roll < 60 || live.isEmpty {
                let name = "\(prefix)-\(index)"
                index += 1
                acknowledge("begin add \(name)")
                try store.put(NewEntry(name: name, secret: SecureBytes(copying: Array("secret-\(name)".utf8))))
                live.append(name)
                acknowledge("ok add \(name)")
            } else if roll < 85 {
                let name = live[Int.random(in: 0..<live.count, using: &generator)]
                let secret = try store.secret(named: name)
                guard secret == SecureBytes(copying: Array("secret-\(name)".utf8)) else { fail("wrong secret for \(name)") }
                acknowledge("ok get \(name)")
            } else if roll < 95 {
                let name = live.remove(at: Int.random(in: 0..<live.count, using: &generator))
                acknowledge("begin rm \(name)")
                try store.remove(named: name)
                acknowledge("ok rm \(name)")
            } else if roll < 97 {
                try store.rotate()
                acknowledge("ok rotate")
            } else {
                try store.changeKey(to: VaultKey.fromKeyFile(path: keyFile))
                acknowledge("ok passwd")
            }
        }
    case "verify":
        let report = try store.verify()
        guard report.isIntact else { fail("verify: \(report.failures.count) entries fail to authenticate") }
        let entries = try store.list()
        for metadata in entries {
            let secret = try store.secret(named: metadata.name, owner: metadata.owner)
            guard secret == SecureBytes(copying: Array("secret-\(metadata.name)".utf8)) else {
                fail("verify: wrong secret for \(metadata.name)")
            }
            acknowledge("entry \(metadata.name)")
        }
        acknowledge("ok verify \(entries.count) \(store.generation)")
    default:
        fail("unknown command \(command)")
    }
} catch {
    fail("error: \(error)")
}

/// Session commands: a sign-in to be killed mid-migration, and a refresh racing another process.
func runSessionCommand(_ command: String, directory: String, key: VaultKey, argument: String, number: Int) async throws {
    let session = SessionManager(directory: directory, key: key, configuration: SessionConfiguration(lockTimeout: .seconds(30)))
    switch command {
    case "signin":
        _ = await session.restore()
        acknowledge("begin signin")
        let credentials = Credentials(accessToken: SecureBytes(copying: Array("access-\(argument)".utf8)),
                                      refreshToken: SecureBytes(copying: Array("refresh".utf8)),
                                      expiresAt: Date().addingTimeInterval(3600))
        try await session.signIn(user: User(id: argument, onboardingComplete: true), credentials: credentials)
        acknowledge("ok signin")
    default:
        let counterFile = argument
        let credentials = try await session.validCredentials(minTTL: .seconds(60)) { _ in
            let handle = FileHandle(forWritingAtPath: counterFile)
            handle?.seekToEndOfFile()
            handle?.write(Data("refresh \(getpid())\n".utf8))
            try? handle?.close()
            try await Task.sleep(for: .milliseconds(number))
            return Credentials(accessToken: SecureBytes(copying: Array("fresh-\(getpid())".utf8)),
                               expiresAt: Date().addingTimeInterval(3600))
        }
        acknowledge("ok \(credentials.expiresAt.map { "\($0.timeIntervalSince1970)" } ?? "none")")
    }
}

/// Counts how often a 5 ms ticker runs while `unlocks` sessions unlock a passphrase vault at once.
func measurePoolTicks(directory: String, unlocks: Int) async throws {
    let passphrase = VaultKey.passphrase(SecureBytes(copying: Array("correct horse battery staple".utf8)))
    _ = try SecretStore.create(in: directory, key: passphrase)
    let ticks = TickCounter()
    let ticker = Task {
        while !Task.isCancelled {
            ticks.increment()
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
    let started = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for _ in 0..<unlocks {
            group.addTask { _ = try await SessionManager(directory: directory, key: passphrase).items() }
        }
        try await group.waitForAll()
    }
    let elapsed = ContinuousClock.now - started
    ticker.cancel()
    let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    acknowledge("ticks \(ticks.value) of \(Int(milliseconds / 5))")
}

/// A counter the ticker task and the main task share.
final class TickCounter: @unchecked Sendable {
    // Safe: `count` is only touched under `lock`.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
