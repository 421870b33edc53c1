// One import for app developers: the types of VaultCrypto that the public API of CredentialVault
// mentions or throws (`SecureBytes`, `CryptoError`) come with `import CredentialVault`, and nothing
// else of it: the primitives (`SHA256`, `HMACSHA256`, `AES256GCM`, …) stay in VaultCrypto for those
// who import it, so they never clash with swift-crypto's names in an app that imports both.
@_exported import struct VaultCrypto.SecureBytes
@_exported import struct VaultCrypto.CryptoError
