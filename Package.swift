// swift-tools-version:6.0
import PackageDescription

// Dependencies point one way only:
// VaultCLI → CredentialVault → VaultCrypto → CVaultCryptoShims → COpenSSL → libcrypto.
let package = Package(
    name: "vault",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "vault", targets: ["VaultCLI"]),
        .library(name: "CredentialVault", targets: ["CredentialVault"]),
        .library(name: "VaultCrypto", targets: ["VaultCrypto"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // `swift package generate-documentation` (DocC); a plugin, linked into nothing.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "COpenSSL",
            path: "CModules/COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev", "pkg-config"])]
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
            ]
        ),
        .executableTarget(
            name: "VaultCLI",
            dependencies: [
                "CredentialVault",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "VaultTestWorker",
            dependencies: ["CredentialVault", "VaultCrypto"]
        ),
        // In-process figures for scripts/bench (docs/BENCHMARKS.md); not a product.
        .executableTarget(
            name: "VaultBench",
            dependencies: ["CredentialVault", "VaultCrypto"]
        ),
        // The five flows of docs/SESSIONS.md and the DocC articles, as small programs the
        // tests build and run (ExamplesTests), so the documentation cannot drift from the API.
        .target(name: "ExampleSupport", dependencies: ["CredentialVault"], path: "Examples/ExampleSupport"),
        .executableTarget(name: "AnonymousModeExample", dependencies: ["CredentialVault", "ExampleSupport"],
                          path: "Examples/AnonymousMode"),
        .executableTarget(name: "GuestSignInExample", dependencies: ["CredentialVault", "ExampleSupport"],
                          path: "Examples/GuestSignIn"),
        .executableTarget(name: "GuestPurchasesExample", dependencies: ["CredentialVault", "ExampleSupport"],
                          path: "Examples/GuestPurchases"),
        .executableTarget(name: "LaunchLoaderExample", dependencies: ["CredentialVault", "ExampleSupport"],
                          path: "Examples/LaunchLoader"),
        .executableTarget(name: "OnboardingExample", dependencies: ["CredentialVault", "ExampleSupport"],
                          path: "Examples/Onboarding"),
        .testTarget(
            name: "VaultCryptoTests",
            dependencies: ["VaultCrypto"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "CredentialVaultTests",
            dependencies: ["CredentialVault", "VaultCrypto", "VaultTestWorker", "AnonymousModeExample", "GuestSignInExample",
                           "GuestPurchasesExample", "LaunchLoaderExample", "OnboardingExample"],
            resources: [.copy("Fixtures")]
        ),
        .testTarget(
            name: "VaultCLITests",
            dependencies: ["CredentialVault", "VaultCLI"],
            resources: [.copy("Fixtures")]
        ),
    ]
)
