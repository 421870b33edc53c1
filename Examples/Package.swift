// swift-tools-version:6.0
import PackageDescription

// The five flows of docs/SESSIONS.md and the DocC articles, as small programs against the public
// `CredentialVault` product only, with a test that runs each (`swift test --package-path Examples`,
// a CI stage of its own), so the documentation cannot drift from the API. A package of its own:
// nothing here is in vault's products or its test targets.
let package = Package(
    name: "vault-examples",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "vault", path: ".."),
    ],
    targets: [
        .target(name: "ExampleSupport", dependencies: [.product(name: "CredentialVault", package: "vault"),
                                                       .product(name: "VaultCrypto", package: "vault")], path: "ExampleSupport"),
        .executableTarget(name: "AnonymousModeExample", dependencies: [.product(name: "CredentialVault", package: "vault"), "ExampleSupport"],
                          path: "AnonymousMode"),
        .executableTarget(name: "GuestSignInExample", dependencies: [.product(name: "CredentialVault", package: "vault"), "ExampleSupport"],
                          path: "GuestSignIn"),
        .executableTarget(name: "GuestPurchasesExample", dependencies: [.product(name: "CredentialVault", package: "vault"), "ExampleSupport"],
                          path: "GuestPurchases"),
        .executableTarget(name: "LaunchLoaderExample", dependencies: [.product(name: "CredentialVault", package: "vault"), "ExampleSupport"],
                          path: "LaunchLoader"),
        .executableTarget(name: "OnboardingExample", dependencies: [.product(name: "CredentialVault", package: "vault"), "ExampleSupport"],
                          path: "Onboarding"),
        // The one example with the real OAuth client, run against the real server (scripts/oauth-server).
        .executableTarget(name: "OAuthSignInExample",
                          dependencies: [.product(name: "CredentialVault", package: "vault"),
                                         .product(name: "CredentialVaultOAuth", package: "vault"), "ExampleSupport"],
                          path: "OAuthSignIn"),
        .testTarget(name: "ExamplesTests",
                    dependencies: ["AnonymousModeExample", "GuestSignInExample", "GuestPurchasesExample", "LaunchLoaderExample",
                                   "OnboardingExample", "OAuthSignInExample"],
                    path: "Tests/ExamplesTests"),
    ]
)
