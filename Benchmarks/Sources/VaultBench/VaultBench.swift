#if canImport(Glibc)
import Glibc
#endif
import CredentialVault
import Foundation
import VaultCrypto

// In-process benchmarks for scripts/bench (docs/BENCHMARKS.md). Not part of the product:
// it only uses the public API, and it prints one JSON object per figure on standard output.
//
//   VaultBench populate DIR KEYFILE COUNT     a vault with COUNT 1 KiB entries (entry-00001 …) and a signed-in user
//   VaultBench startup DIR KEYFILE NAME [ITERATIONS]
//                                             read the files / SecretStore.open + secret(named:) / SessionManager.restore()
//   VaultBench crypto [SECONDS] [BYTES]       AES256GCM.seal and .open throughput on BYTES-sized buffers (16 KiB)
//   VaultBench scrypt [ITERATIONS]            one scrypt unlock at the default policy (KDFPolicy.standard)

/// The user `populate` signs in, so that `restore()` has credentials to bring back.
let benchUser = User(id: "bench-user", displayName: "Bench", onboardingComplete: true)

/// Secret length used everywhere in the benchmarks (a JWT-sized token).
let secretByteCount = 1024

@main
enum VaultBench {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch (arguments.first, arguments.count) {
            case ("populate", 4):
                try await populate(directory: arguments[1], keyFile: arguments[2], count: try integer(arguments[3]))
            case ("startup", 4), ("startup", 5):
                try await startup(directory: arguments[1], keyFile: arguments[2], name: arguments[3],
                                  iterations: arguments.count == 5 ? try integer(arguments[4]) : 200)
            case ("crypto", 1...3):
                try crypto(seconds: arguments.count > 1 ? try number(arguments[1]) : 2,
                           bufferBytes: arguments.count > 2 ? try integer(arguments[2]) : 16384)
            case ("scrypt", 1...2):
                try scrypt(iterations: arguments.count > 1 ? try integer(arguments[1]) : 1)
            default:
                FileHandle.standardError.write(Data("usage: VaultBench populate|startup|crypto|scrypt … (see the source)\n".utf8))
                exit(64)
            }
        } catch {
            FileHandle.standardError.write(Data("VaultBench: \(error)\n".utf8))
            exit(1)
        }
    }

    // MARK: populate

    /// Creates a vault with `count` app-wide entries of 1 KiB in one transaction, then signs a
    /// user in (three more entries, in the user's namespace, and a profile.json).
    static func populate(directory: String, keyFile: String, count: Int) async throws {
        let key = try VaultKey.fromKeyFile(path: keyFile)
        let store = try SecretStore.create(in: directory, key: key)
        try store.update { transaction in
            for number in 1...max(count, 1) {
                try transaction.put(NewEntry(name: entryName(number), secret: try token(), label: "bench \(number)"))
            }
        }
        let session = SessionManager(directory: directory, key: key)
        let credentials = Credentials(accessToken: try token(), refreshToken: try token(),
                                      expiresAt: Date().addingTimeInterval(30 * 24 * 3600))
        try await session.signIn(user: benchUser, credentials: credentials)
        emit(["figure": "populate", "entries": count, "fileBytes": fileSize(directory + "/" + SecretStore.FileNames.vault)])
    }

    /// `entry-00042`: sorts the same way as its number.
    static func entryName(_ number: Int) -> String {
        let digits = String(number)
        return "entry-" + String(repeating: "0", count: max(0, 5 - digits.count)) + digits
    }

    /// 1 KiB of base64 text from random bytes: the shape of a real token.
    static func token() throws -> SecureBytes {
        let raw = try SecureRandom.bytes(count: secretByteCount * 3 / 4)
        return SecureBytes(copying: Array(Data(raw).base64EncodedString().utf8.prefix(secretByteCount)))
    }

    // MARK: startup

    /// Median times of: reading the files restore() reads (key file, vault, profile) with plain
    /// POSIX calls; `SecretStore.open` + `secret(named:)`; `SessionManager.restore()`.
    static func startup(directory: String, keyFile: String, name: String, iterations: Int) async throws {
        let vaultPath = directory + "/" + SecretStore.FileNames.vault
        let profilePath = directory + "/profile.json"
        var readTimes: [Double] = [], getTimes: [Double] = [], restoreTimes: [Double] = []
        var bytesRead = 0
        for round in 0...iterations {  // round 0 warms the caches and is not counted
            let read = try measure {
                bytesRead = try readWhole(keyFile) + readWhole(vaultPath) + readWhole(profilePath)
            }
            let get = try measure {
                let store = try SecretStore.open(in: directory, key: try VaultKey.fromKeyFile(path: keyFile))
                let secret = try store.secret(named: name)
                guard secret.count == secretByteCount else { throw BenchError("\(name) holds \(secret.count) bytes") }
            }
            let start = ContinuousClock.now
            let session = SessionManager(directory: directory, key: try VaultKey.fromKeyFile(path: keyFile))
            let state = await session.restore()
            let restore = seconds(ContinuousClock.now - start)
            guard state.name == "signedIn" else { throw BenchError("restore() returned \(state); run populate first") }
            if round > 0 {
                readTimes.append(read)
                getTimes.append(get)
                restoreTimes.append(restore)
            }
        }
        let entries = try SecretStore.open(in: directory, key: try VaultKey.fromKeyFile(path: keyFile)).list().count
        emit(["figure": "startup", "entries": entries, "fileBytes": bytesRead, "iterations": iterations,
              "readMs": median(readTimes) * 1000, "openGetMs": median(getTimes) * 1000,
              "restoreMs": median(restoreTimes) * 1000])
    }

    /// Reads a whole file with open/read/close and returns its length.
    static func readWhole(_ path: String) throws -> Int {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BenchError("cannot open \(path)") }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw BenchError("cannot stat \(path)") }
        var buffer = [UInt8](repeating: 0, count: max(Int(status.st_size), 1))
        var total = 0
        while total < buffer.count {
            let count = buffer.withUnsafeMutableBytes { whole in
                let rest = UnsafeMutableRawBufferPointer(rebasing: whole[total...])
                return read(descriptor, rest.baseAddress, rest.count)
            }
            if count <= 0 { break }
            total += count
        }
        return total
    }

    // MARK: crypto

    /// Throughput of the crypto layer's AES-256-GCM on `bufferBytes`-sized messages, for
    /// comparison with `openssl speed -evp aes-256-gcm -bytes 16384`. Each call is a whole
    /// message: fresh random nonce (seal), key set-up, 16-byte tag, zeroising output buffer.
    static func crypto(seconds limit: Double, bufferBytes: Int) throws {
        let key = try SymmetricKey.generate()
        let plaintext = [UInt8](repeating: 0x5A, count: bufferBytes)
        let aad = [UInt8]("vault/bench".utf8)
        let box = try AES256GCM.seal(plaintext, using: key, authenticating: aad)
        var sealCount = 0, openCount = 0
        let sealTime = try timed(limit) {
            _ = try AES256GCM.seal(plaintext, using: key, authenticating: aad)
            sealCount += 1
        }
        let openTime = try timed(limit) {
            _ = try AES256GCM.open(box, using: key, authenticating: aad)
            openCount += 1
        }
        emit(["figure": "crypto", "bufferBytes": bufferBytes,
              "sealMBps": Double(sealCount * bufferBytes) / sealTime / 1e6,
              "openMBps": Double(openCount * bufferBytes) / openTime / 1e6,
              "sealMicroseconds": sealTime / Double(sealCount) * 1e6,
              "openMicroseconds": openTime / Double(openCount) * 1e6])
    }

    // MARK: scrypt

    /// One passphrase unlock's KDF at the default policy (logN 17, r 8, p 1), as `SecretStore` runs it.
    static func scrypt(iterations: Int) throws {
        let policy = KDFPolicy.standard
        let parameters = Scrypt.Parameters(logN: policy.defaultLogN, r: policy.r, p: policy.p)
        let salt = try SecureRandom.bytes(count: policy.saltByteCount)
        let password = SecureBytes(copying: Array("correct horse battery staple".utf8))
        var times: [Double] = []
        for _ in 0..<max(iterations, 1) {
            times.append(try measure {
                _ = try Scrypt.deriveKey(password: password, salt: salt, parameters: parameters, outputByteCount: 32)
            })
        }
        emit(["figure": "scrypt", "logN": Int(parameters.logN), "r": Int(parameters.r), "p": Int(parameters.p),
              "iterations": times.count, "medianMs": median(times) * 1000])
    }

    // MARK: helpers

    static func measure(_ body: () throws -> Void) throws -> Double {
        let start = ContinuousClock.now
        try body()
        return seconds(ContinuousClock.now - start)
    }

    /// Runs `body` until `limit` seconds have passed; returns the time taken.
    static func timed(_ limit: Double, _ body: () throws -> Void) throws -> Double {
        let start = ContinuousClock.now
        var elapsed = 0.0
        repeat {
            for _ in 0..<64 { try body() }
            elapsed = seconds(ContinuousClock.now - start)
        } while elapsed < limit
        return elapsed
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return .nan }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    static func fileSize(_ path: String) -> Int {
        var status = stat()
        return stat(path, &status) == 0 ? Int(status.st_size) : -1
    }

    static func integer(_ text: String) throws -> Int {
        guard let value = Int(text), value >= 0 else { throw BenchError("not a count: \(text)") }
        return value
    }

    static func number(_ text: String) throws -> Double {
        guard let value = Double(text), value > 0 else { throw BenchError("not a number of seconds: \(text)") }
        return value
    }

    static func emit(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
