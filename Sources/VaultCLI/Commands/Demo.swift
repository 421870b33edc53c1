import ArgumentParser
import CredentialVault
import FoundationEssentials

extension VaultCommand {
    /// `vault demo`: a real session, end to end, in a throwaway folder.
    struct Demo: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "demo",
            abstract: "Walk through a real session in a throwaway folder, then remove it.",
            discussion: """
                Runs the real commands, each in a new process, with a fresh key file: guest mode, guest items, \
                sign-in with migration, a restart that restores the user, expiry, sign-out and wipe. \
                Nothing outside the throwaway folder is touched.
                """
        )

        @Flag(help: "Keep the throwaway folder (its path is printed) instead of removing it.")
        var keep = false

        func run(_ context: CommandContext) async throws {
            let folder = try DemoFolder()
            defer { if !keep { folder.remove() } }
            let runner = try DemoRunner(folder: folder, environment: context.environment)
            try await runner.walkThrough()
            print(keep ? "\nKept \(folder.path)." : "\nDone. Removed \(folder.path); nothing else was touched.")
        }
    }
}

/// A private temporary folder for the demo.
struct DemoFolder {
    let path: String

    init() throws {
        path = PathText.joining(PathText.temporaryDirectory(), "vault-demo-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs each demo step as a separate `vault` process and prints what it did.
struct DemoRunner {
    let folder: DemoFolder
    let executable: String
    let environment: [String: String]
    var vaultDirectory: String { folder.path + "/vault" }
    var keyFile: String { folder.path + "/demo.key" }

    /// - Parameter environment: the `demo` command's environment; the steps get only its `PATH`.
    init(folder: DemoFolder, environment: CommandEnvironment) throws {
        self.folder = folder
        executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        self.environment = Self.stepEnvironment(folder: folder.path, inherited: environment)
    }

    /// The environment every step runs with, made from nothing: the demo's vault and key file, and
    /// the throwaway folder as HOME, so that nothing a step writes outside the vault folder (the
    /// rollback memory under `~/.local/state`) lands outside it, and no variable of the user's
    /// (`VAULT_*`, `XDG_*`, an agent's socket, a passphrase) reaches a step.
    static func stepEnvironment(folder: String, inherited: CommandEnvironment) -> [String: String] {
        var environment = ["VAULT_DIR": folder + "/vault", "VAULT_KEY_FILE": folder + "/demo.key", "HOME": folder]
        environment["PATH"] = inherited[.path]
        return environment
    }

    func walkThrough() async throws {
        print("vault demo: a real session, end to end, in \(folder.path)")
        print("Every step below is a new 'vault' process. VAULT_DIR, VAULT_KEY_FILE and HOME point into that folder.\n")

        step(1, "Make a fresh 32-byte key file (mode 0600) and an empty vault")
        try run(["keygen", keyFile])
        try run(["init"])

        step(2, "First launch: the app is a guest with a stable anonymous id")
        let anonymousID = try run(["guest"]).trimmingWhitespace()
        try run(["status"])

        step(3, "The guest adds items: a cart that moves on sign-in, coins that stay with the guest")
        try run(["add", "cart", "--guest", "--label", "Shopping cart"], input: Data("2 x coffee beans".utf8))
        try run(["add", "coins", "--guest", "--non-transferable", "--label", "Consumable coins"], input: Data("150".utf8))

        step(4, "Sign in: an OAuth token response arrives on stdin; the guest's cart moves to the account in one write")
        try run(["signin", "--user-id", "u-1001", "--name", "Ada Lovelace", "--email", "ada@example.com", "--onboarded"],
                input: Self.tokenResponse(expiresIn: 8), shown: "curl -s https://auth.example.com/token … |")

        step(5, "Restart: a new process restores the signed-in user from both stores")
        try run(["status"])
        try run(["list"])
        try run(["inspect", "session.access-token", "--owner", "user:u-1001"])

        step(6, "Time passes: the leeway (60 s, at most half a token's life) makes the 8-second token expired after 4 s")
        try await Task.sleep(for: .seconds(4.2))
        try run(["status", "--json"])

        step(7, "Sign out: the user's credentials are removed (data key rotated); the same guest is back")
        try run(["signout"])
        try run(["status"])
        try run(["list", "--owner", "guest:\(anonymousID)"])

        step(8, "Wipe everything: credentials, profile and anonymous id")
        try run(["wipe", "--yes", "--all"])
        try run(["status"], expectedStatus: 0)
    }

    private func step(_ number: Int, _ title: String) {
        print("\n\(number). \(title)")
    }

    /// Runs `vault ARGUMENTS`, printing the command and its indented output.
    @discardableResult
    private func run(_ arguments: [String], input: Data? = nil, shown prefix: String? = nil, expectedStatus: Int32 = 0) throws -> String {
        let shownArguments = arguments.map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
        let feed = input.map { _ in "printf '…' | " } ?? ""
        print("   $ \(prefix.map { $0 + " " } ?? feed)vault \(shownArguments)")
        let result = Subprocess.run([executable] + arguments, input: input.map { SecureBytes(copying: $0) },
                                    captureOutput: true, captureErrors: true, environment: environment, timeout: 120)
        let text = result.output.map { String(decoding: $0.withUnsafeBytes { Array($0) }, as: UTF8.self) } ?? ""
        for line in (text + String(decoding: result.errors, as: UTF8.self)).split(separator: "\n") {
            print("     \(line)")
        }
        guard result.status == expectedStatus else {
            throw DemoFailure(command: shownArguments, status: result.status)
        }
        return text
    }

    /// A token response like an authorization server's, with a JWT access token (fake signature).
    static func tokenResponse(expiresIn: Int) -> Data {
        let now = Int(Date().timeIntervalSince1970)
        func part(_ json: String) -> String {
            Data(json.utf8).base64EncodedString().replacing("+", with: "-").replacing("/", with: "_").replacing("=", with: "")
        }
        let jwt = part(#"{"alg":"RS256","typ":"JWT"}"#) + "."
            + part(#"{"sub":"u-1001","iss":"https://auth.example.com","iat":\#(now),"exp":\#(now + expiresIn),"scope":"openid profile"}"#)
            + ".ZGVtby1zaWduYXR1cmUtbm90LXZlcmlmaWVk"
        return Data("""
            {"access_token":"\(jwt)","token_type":"Bearer","expires_in":\(expiresIn),\
            "refresh_token":"demo-refresh-token-8f14e45f","scope":"openid profile"}
            """.utf8)
    }
}

/// A demo step exited with the wrong status.
struct DemoFailure: Error, CustomStringConvertible {
    let command: String
    let status: Int32
    var description: String { "demo step 'vault \(command)' exited with status \(status)" }
}
