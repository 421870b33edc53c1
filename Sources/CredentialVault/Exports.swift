// One import for app developers: every type the public API of CredentialVault mentions
// (`SecureBytes`, `CryptoError`, `SymmetricKey`, …) comes with `import CredentialVault`.
@_exported import VaultCrypto
