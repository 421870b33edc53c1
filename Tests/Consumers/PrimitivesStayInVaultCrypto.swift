// Type-checked by scripts/check-consumer against the built CredentialVault, and expected to FAIL:
// `import CredentialVault` brings SecureBytes and CryptoError but none of VaultCrypto's
// primitives, so these names are not in scope (they would clash with swift-crypto's).
import CredentialVault

_ = SecureBytes.self
_ = SHA256.self
_ = HMACSHA256.self
_ = AES256GCM.self
_ = SymmetricKey.self
_ = SecureRandom.self
