// swift-tools-version:6.0
import PackageDescription

// Dependencies point one way only:
// VaultMain (vault) → VaultCLI → CredentialVault → VaultCrypto → CVaultCryptoShims → COpenSSL → libcrypto.
// VaultOAuthMain (vault-oauth) → VaultOAuthCLI → VaultCLI + CredentialVaultOAuth.
// VaultPostgresMain (vault-postgres) → VaultOAuthCLI + CredentialVaultPostgres.
// CredentialVaultOAuth → CredentialVault (+ AsyncHTTPClient); neither the core nor `vault` links the network.
// CredentialVaultPostgres → CredentialVault (+ PostgresNIO): the fleet store, a product of its own.
// VaultSecretServiceMain (vault-secret-service) → VaultSecretService → VaultCLI + CSystemdBus → libsystemd (sd-bus).
// Benchmarks/Package.swift and Examples/Package.swift are packages of their own that depend on this one.
let package = Package(
    name: "vault",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "vault", targets: ["VaultMain"]),
        // The same commands linked with the OAuth client; `vault` hands it the commands that call a server.
        .executable(name: "vault-oauth", targets: ["VaultOAuthMain"]),
        // The same commands linked with the PostgreSQL store; `vault` hands it any postgres:// store.
        .executable(name: "vault-postgres", targets: ["VaultPostgresMain"]),
        // The same commands linked with sd-bus; `vault` hands it `agent --secret-service` and
        // `import --from secret-service` (the freedesktop Secret Service provider).
        .executable(name: "vault-secret-service", targets: ["VaultSecretServiceMain"]),
        .library(name: "CredentialVault", targets: ["CredentialVault"]),
        .library(name: "VaultCrypto", targets: ["VaultCrypto"]),
        // The OAuth 2.0 client; a product of its own so that the core links no HTTP stack.
        .library(name: "CredentialVaultOAuth", targets: ["CredentialVaultOAuth"]),
        // The encrypted store on PostgreSQL (server fleets); its own product so that only apps
        // that use it link a database driver.
        .library(name: "CredentialVaultPostgres", targets: ["CredentialVaultPostgres"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // `swift package generate-documentation` (DocC); a plugin, linked into nothing.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        // Named for their types in AsyncHTTPClient's API (ByteBuffer, HTTPHeaders, TLSConfiguration);
        // they come with async-http-client anyway.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            path: "CModules/COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev", "pkg-config"])]
        ),
        // sd-bus (libsystemd), used only by VaultSecretService: the D-Bus of the Secret Service provider.
        .systemLibrary(
            name: "CSystemdBus",
            path: "CModules/CSystemdBus",
            pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]
        ),
        .target(
            name: "CVaultCryptoShims",
            dependencies: ["COpenSSL"],
            path: "CModules/CVaultCryptoShims"
        ),
        .target(
            name: "VaultCrypto",
            dependencies: ["CVaultCryptoShims", "COpenSSL"]
        ),
        .target(
            name: "CredentialVault",
            dependencies: [
                "VaultCrypto",
                .product(name: "Logging", package: "swift-log"),
            ],
            // EFF's word list and its licence: embedded as Generation/EFFLargeWordList.swift
            // (scripts/generate-wordlist), kept here as published.
            exclude: ["Generation/Resources"]
        ),
        // The only target with a network dependency (docs/ARCHITECTURE.md).
        .target(
            name: "CredentialVaultOAuth",
            dependencies: [
                "CredentialVault",
                "VaultCrypto",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The PostgreSQL store: ciphertext-only rows, one transaction per write, fleet-wide
        // single-flight refresh (docs/FORMAT.md, "PostgreSQL tables").
        .target(
            name: "CredentialVaultPostgres",
            dependencies: [
                "CredentialVault",
                "VaultCrypto",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The commands, shared by the three executables below.
        .target(
            name: "VaultCLI",
            dependencies: [
                "CredentialVault",
                // The primitives the commands call themselves (SHA256, SecureWipe, P256SigningKey, …);
                // `import CredentialVault` brings only SecureBytes and CryptoError (Exports.swift).
                "VaultCrypto",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The commands' OAuth support (`OAuthCommandSupport`), for the executables that link the client.
        .target(name: "VaultOAuthCLI", dependencies: ["VaultCLI", "CredentialVaultOAuth", "CredentialVault", "VaultCrypto"]),
        // The Secret Service provider (`SecretServiceCommands`): the only target that speaks D-Bus.
        .target(name: "VaultSecretService", dependencies: ["VaultCLI", "CredentialVault", "VaultCrypto", "CSystemdBus"]),
        // `vault`: links neither the HTTP stack nor a database driver (docs/ARCHITECTURE.md, "Helper executables").
        .executableTarget(name: "VaultMain", dependencies: ["VaultCLI"]),
        // `vault-oauth`: the same commands with the OAuth client.
        .executableTarget(name: "VaultOAuthMain", dependencies: ["VaultCLI", "VaultOAuthCLI"]),
        // `vault-postgres`: the same commands with the OAuth client and the PostgreSQL store.
        .executableTarget(name: "VaultPostgresMain", dependencies: ["VaultCLI", "VaultOAuthCLI", "CredentialVaultPostgres", "CredentialVault", "VaultCrypto"]),
        // `vault-secret-service`: the same commands with the Secret Service provider.
        .executableTarget(name: "VaultSecretServiceMain", dependencies: ["VaultCLI", "VaultSecretService"]),
        // Test workers: programs the tests start as other processes (Tests/Workers, not products).
        // Opens, writes and locks a vault from another process (the concurrency and crash tests).
        .executableTarget(
            name: "VaultTestWorker",
            dependencies: ["CredentialVault", "VaultCrypto"],
            path: "Tests/Workers/VaultTestWorker"
        ),
        // Refreshes a session through the OAuth client from another process (the OAuth tests).
        .executableTarget(
            name: "VaultOAuthTestWorker",
            dependencies: ["CredentialVaultOAuth", "CredentialVault", "VaultCrypto"],
            path: "Tests/Workers/VaultOAuthTestWorker"
        ),
        // Stands for one replica of a server app in the fleet refresh test (PostgreSQL + OAuth).
        .executableTarget(
            name: "VaultPostgresTestWorker",
            dependencies: ["CredentialVaultPostgres", "CredentialVaultOAuth", "CredentialVault", "VaultCrypto",
                           .product(name: "Logging", package: "swift-log")],
            path: "Tests/Workers/VaultPostgresTestWorker"
        ),
        // How the test processes schedule their tests: suites that block (child processes, servers) run
        // on threads of their own, not Swift's cooperative pool; wall-clock tests run in a process of
        // their own (scripts/test). Shared by every test target.
        .target(
            name: "TestScheduling",
            path: "Tests/Support/TestScheduling"
        ),
        .testTarget(
            name: "VaultCryptoTests",
            dependencies: ["VaultCrypto", "TestScheduling"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "CredentialVaultTests",
            dependencies: ["CredentialVault", "VaultCrypto", "VaultTestWorker", "TestScheduling",
                           .product(name: "Logging", package: "swift-log")],
            resources: [.copy("Fixtures")]
        ),
        // The real authorization server as the OAuth suites use it (scripts/oauth-server starts it).
        .target(
            name: "OAuthServerSupport",
            dependencies: ["CredentialVaultOAuth", "CredentialVault", "VaultCrypto", "TestScheduling"],
            path: "Tests/Support/OAuthServerSupport"
        ),
        .testTarget(
            name: "CredentialVaultOAuthTests",
            dependencies: ["CredentialVaultOAuth", "CredentialVault", "VaultCrypto", "OAuthServerSupport", "VaultOAuthTestWorker",
                           "TestScheduling", .product(name: "NIOHTTP1", package: "swift-nio")]
        ),
        .testTarget(
            name: "CredentialVaultPostgresTests",
            dependencies: ["CredentialVaultPostgres", "CredentialVault", "VaultCrypto", "VaultPostgresTestWorker",
                           "CredentialVaultOAuth", "OAuthServerSupport", "TestScheduling",
                           // PostgresTransactionCutTests drives a leased connection itself.
                           .product(name: "PostgresNIO", package: "postgres-nio"),
                           .product(name: "Logging", package: "swift-log")]
        ),
        // The OAuth commands against the real server, through the built executables.
        .testTarget(
            name: "VaultOAuthCLITests",
            dependencies: ["VaultOAuthCLI", "CredentialVaultOAuth", "CredentialVault", "VaultCrypto", "OAuthServerSupport",
                           "VaultMain", "VaultOAuthMain", "VaultPostgresMain", "TestScheduling"]
        ),
        .testTarget(
            name: "VaultCLITests",
            dependencies: ["CredentialVault", "VaultCrypto", "VaultCLI", "VaultMain", "VaultOAuthMain", "VaultPostgresMain",
                           "CredentialVaultPostgres", "TestScheduling"],
            resources: [.copy("Fixtures")]
        ),
        // The Secret Service provider against a private dbus-daemon and the real clients (secret-tool, secretstorage).
        .testTarget(
            name: "VaultSecretServiceTests",
            dependencies: ["VaultSecretService", "VaultCLI", "CredentialVault", "VaultCrypto", "VaultSecretServiceMain", "TestScheduling"]
        ),
    ]
)

// scripts/sanitize builds this package's own targets (the C shim included) with a sanitizer, in
// the build folder the other stages use, so that the dependencies (SwiftNIO, BoringSSL,
// async-http-client, postgres-nio: most of the build) are not compiled a second time for it.
// They run uninstrumented; the sanitizer's runtime still sees every allocation and every access
// our code makes, and LeakSanitizer the whole process. Set by scripts/sanitize only, for
// AddressSanitizer (ThreadSanitizer needs every library instrumented, or it reports false races).
if let sanitizer = Context.environment["VAULT_SANITIZE_OWN_TARGETS"], sanitizer == "address" {
    for target in package.targets where target.type != .system {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=\(sanitizer)"])]
        target.cSettings = (target.cSettings ?? []) + [.unsafeFlags(["-fsanitize=\(sanitizer)"])]
        target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(["-sanitize=\(sanitizer)"])]
    }
}
