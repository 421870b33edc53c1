// Only `import CredentialVault` for the library: SecureBytes and CryptoError come with it, and
// none of VaultCrypto's primitives do, so another crypto module's names (swift-crypto's SHA256,
// HMAC, SymmetricKey) resolve without qualification beside it.
import CredentialVault
import OtherCrypto

let s: SecureBytes = SecureBytes(copying: Array("token".utf8))
let key: VaultKey = .keyMaterial(SecureBytes(copying: [UInt8](repeating: 7, count: 32)))
let error: CryptoError? = nil
let store: SecretStore.Type = SecretStore.self
let others = [SHA256.origin, HMAC.origin, AES256GCM.origin, "\(type(of: SymmetricKey()))"]
print("single import:", s.count, key, error == nil, store, others.joined(separator: ","))
