// Only this import: SecureBytes, SymmetricKey and CryptoError come with it.
import CredentialVault

let s: SecureBytes = SecureBytes(copying: Array("token".utf8))
let key: VaultKey = .keyMaterial(SecureBytes(copying: [UInt8](repeating: 7, count: 32)))
let error: CryptoError? = nil
let store: SecretStore.Type = SecretStore.self
print("single import:", s.count, key, error == nil, store)
