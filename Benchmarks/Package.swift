// swift-tools-version:6.0
import PackageDescription

// The benchmark programs, a package of their own (as swift-nio keeps Benchmarks/Package.swift): they
// build against the vault package's products, and nothing of theirs is in vault's products or tests.
// scripts/bench (VaultBench beside the vault binary and its peers) and scripts/bench-postgres
// (VaultPostgresBench against a real PostgreSQL) build them; CI builds both and runs a short
// VaultPostgresBench (scripts/check-benchmarks). The C floors (floor-get.c, floor-add.c) are built by scripts/bench.
let package = Package(
    name: "vault-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "vault", path: ".."),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
    ],
    targets: [
        // In-process figures for scripts/bench (docs/BENCHMARKS.md).
        .executableTarget(
            name: "VaultBench",
            dependencies: [.product(name: "CredentialVault", package: "vault"), .product(name: "VaultCrypto", package: "vault")]
        ),
        // The PostgreSQL store's latency and throughput next to a bare SELECT (scripts/bench-postgres).
        .executableTarget(
            name: "VaultPostgresBench",
            dependencies: [.product(name: "CredentialVaultPostgres", package: "vault"), .product(name: "CredentialVault", package: "vault"),
                           .product(name: "VaultCrypto", package: "vault"),
                           .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "NIOCore", package: "swift-nio"),
                           .product(name: "Logging", package: "swift-log")]
        ),
    ]
)
