// swift-tools-version:6.0
// An app that depends on the CredentialVault product alone, as the README tells app
// developers to. `scripts/check-consumer` builds it: every type the library's public API
// mentions must be usable with `import CredentialVault` and nothing else.
import PackageDescription

let package = Package(
    name: "SingleImport",
    dependencies: [.package(name: "vault", path: "../../..")],
    targets: [
        .executableTarget(
            name: "SingleImport",
            dependencies: [.product(name: "CredentialVault", package: "vault"), "OtherCrypto"]
        ),
        // Stands for swift-crypto in an app that imports both: its `SHA256`, `HMAC` and
        // `SymmetricKey` must not collide with anything `import CredentialVault` brings.
        .target(name: "OtherCrypto"),
    ]
)
