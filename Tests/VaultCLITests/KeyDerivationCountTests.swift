import Foundation
import Testing
import TestScheduling

/// One invocation derives the key once and asks for a passphrase at most once (the command
/// context): `vault token` with an expired token and a confidential client reads the session,
/// then the client's secret, then refreshes, in `vault-oauth`, with one scrypt in all.
///
/// scrypt is counted where it happens: an `LD_PRELOAD` library (built here with cc) wraps
/// libcrypto's `EVP_PBE_scrypt` and appends a line per derivation to a log; nothing in vault
/// knows about it.
@Suite(.blockingWork, .enabled(if: ScryptCounter.compilerPath != nil, "needs cc to build the counting library"),
       .disabled(if: ProcessInfo.processInfo.environment["VAULT_SANITIZER"] != nil,
                 "an uninstrumented LD_PRELOAD interposer beside a sanitizer's runtime; counted in the plain run"))
struct KeyDerivationCountTests {
    static let passphrase = "correct horse battery staple"

    /// A passphrase vault with a signed-in user whose token is already expired (a refresh token
    /// kept), and a confidential client (client_secret_basic) whose server refuses connections.
    static func expiredSessionWithConfidentialClient() throws -> CLISandbox {
        let sandbox = try CLISandbox()
        let key = ["VAULT_PASSPHRASE": passphrase]
        #expect(try sandbox.run(["init"], environment: key).status == 0)
        let response = #"{"access_token":"at-1","token_type":"Bearer","expires_in":1,"refresh_token":"rt-1"}"#
        let signedIn = try sandbox.run(["signin", "--user-id", "u1"], stdin: Data(response.utf8), environment: key)
        #expect(signedIn.status == 0, "\(signedIn.stderrText)")
        let client = try sandbox.run(["client", "--issuer", "http://127.0.0.1:9", "--token-endpoint", "http://127.0.0.1:9/token",
                                      "--client-id", "app", "--auth", "basic"], stdin: Data("client-secret".utf8), environment: key)
        #expect(client.status == 0, "\(client.stderrText)")
        return sandbox
    }

    @Test func vaultTokenWithAnExpiredTokenAndAConfidentialClientDerivesTheKeyOnce() throws {
        let counter = try ScryptCounter()
        defer { counter.cleanUp() }
        let sandbox = try Self.expiredSessionWithConfidentialClient()
        defer { sandbox.cleanUp() }
        let token = try sandbox.run(["token"], environment: counter.environment.merging(["VAULT_PASSPHRASE": Self.passphrase]) { $1 },
                                    timeout: 60)
        // 69: the refresh reached for the (absent) server, so the session was read, the client's
        // secret was read and the refresh began.
        #expect(token.status == 69, "\(token.stderrText)")
        let derivations = try counter.derivations()
        #expect(derivations.count == 1, "scrypt ran \(derivations.count) times: \(derivations)")
        // In the helper: vault handed the command over before it read a key.
        #expect(Set(derivations.map(\.executable)) == ["vault-oauth"], "\(derivations)")
    }

    @Test(.enabled(if: TerminalDriver.isAvailable, "needs python3 for its pty module"))
    func aTypedPassphraseIsAskedForOnce() throws {
        let counter = try ScryptCounter()
        defer { counter.cleanUp() }
        let sandbox = try Self.expiredSessionWithConfidentialClient()
        defer { sandbox.cleanUp() }
        let run = try TerminalDriver.run(["token"], answers: [Self.passphrase + "\r"], in: sandbox, environment: counter.environment)
        #expect(run.status == 69, "\(run.output)")
        let prompts = run.output.components(separatedBy: "Passphrase for").count - 1
        #expect(prompts == 1, "\(run.output)")
        #expect(try counter.derivations().count == 1)
    }
}

/// Builds and points `LD_PRELOAD` at a library that counts `EVP_PBE_scrypt` derivations.
struct ScryptCounter {
    static let compilerPath = ["/usr/bin/cc", "/usr/bin/gcc"].first { FileManager.default.isExecutableFile(atPath: $0) }

    static let source = #"""
        #define _GNU_SOURCE
        #include <dlfcn.h>
        #include <fcntl.h>
        #include <stdint.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        #include <unistd.h>
        typedef int (*scrypt_fn)(const char *, size_t, const unsigned char *, size_t, uint64_t, uint64_t, uint64_t,
                                 uint64_t, unsigned char *, size_t);
        int EVP_PBE_scrypt(const char *pass, size_t passlen, const unsigned char *salt, size_t saltlen, uint64_t N,
                           uint64_t r, uint64_t p, uint64_t maxmem, unsigned char *key, size_t keylen) {
            scrypt_fn real = (scrypt_fn)dlsym(RTLD_NEXT, "EVP_PBE_scrypt");
            const char *log = getenv("SCRYPT_COUNT_LOG");
            if (key != NULL && log != NULL) {
                char exe[4096] = {0}, line[4200];
                ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
                if (n < 0) n = 0;
                exe[n] = 0;
                const char *base = strrchr(exe, '/');
                int length = snprintf(line, sizeof line, "%d %s %llu\n", (int)getpid(), base ? base + 1 : exe,
                                      (unsigned long long)N);
                int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
                if (fd >= 0) { (void)!write(fd, line, (size_t)length); close(fd); }
            }
            return real(pass, passlen, salt, saltlen, N, r, p, maxmem, key, keylen);
        }
        """#

    let folder: URL

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("scrypt-counter-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let source = folder.appendingPathComponent("count.c")
        try Data(Self.source.utf8).write(to: source)
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: try #require(Self.compilerPath))
        compiler.arguments = ["-shared", "-fPIC", "-O1", "-o", folder.appendingPathComponent("count.so").path, source.path, "-ldl"]
        try compiler.run()
        compiler.waitUntilExit()
        try #require(compiler.terminationStatus == 0, "cc built the counting library")
    }

    /// What a counted run gets in its environment.
    var environment: [String: String] {
        ["LD_PRELOAD": folder.appendingPathComponent("count.so").path, "SCRYPT_COUNT_LOG": folder.appendingPathComponent("log").path]
    }

    /// Every derivation so far: the process id and executable name that ran it.
    func derivations() throws -> [(pid: String, executable: String)] {
        let log = folder.appendingPathComponent("log")
        guard FileManager.default.fileExists(atPath: log.path) else { return [] }
        return try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map { line in
            let fields = line.split(separator: " ")
            return (String(fields.first ?? ""), fields.count > 1 ? String(fields[1]) : "")
        }
    }

    func cleanUp() {
        try? FileManager.default.removeItem(at: folder)
    }
}
