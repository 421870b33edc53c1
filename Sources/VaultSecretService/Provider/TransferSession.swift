import CredentialVault
import VaultCrypto

/// A Secret Service session (`/org/freedesktop/secrets/session/N`): how secrets travel between
/// the provider and the one connection that opened it. `plain` sends them as they are (the bus is
/// the user's own); `dh-ietf1024-sha256-aes128-cbc-pkcs7` encrypts each with the key both sides
/// derived (`SecretServiceKeyAgreement`), a fresh IV per secret, as libsecret and gnome-keyring do.
final class TransferSession {
    /// The algorithm names of the specification.
    enum Algorithm: String {
        case plain
        case dh = "dh-ietf1024-sha256-aes128-cbc-pkcs7"
    }

    /// The session's object path.
    let path: String
    /// The unique bus name of the connection that opened it: the only one that may use it.
    let owner: String
    /// The AES-128 key of a `dh` session; nil for `plain`.
    private let key: SecureBytes?

    /// A session of `owner`'s.
    init(path: String, owner: String, key: SecureBytes?) {
        self.path = path
        self.owner = owner
        self.key = key
    }

    /// A secret as the Secret struct (`(oayays)`: session, parameters, value, content type) carries it.
    func encode(_ secret: SecureBytes, contentType: String) throws -> BusValue {
        guard let key else {
            return .structure([.objectPath(path), .bytes(.empty), .bytes(secret), .string(contentType)])
        }
        let iv = try SecureRandom.bytes(count: 16)
        let ciphertext = try AES128CBC.encrypt(key: key, iv: iv, plaintext: secret)
        return .structure([.objectPath(path), .bytes(SecureBytes(copying: iv)), .bytes(SecureBytes(copying: ciphertext)),
                           .string(contentType)])
    }

    /// The secret a Secret struct carries, and its content type.
    /// - Throws: `BusError` InvalidArgs for a struct of the wrong shape or that does not decrypt.
    func decode(parameters: SecureBytes, value: SecureBytes) throws -> SecureBytes {
        guard let key else {
            guard parameters.isEmpty else { throw BusError.invalidArguments("a plain session's secret has no parameters") }
            return value
        }
        guard parameters.count == 16 else { throw BusError.invalidArguments("the secret's parameters must be a 16-byte IV") }
        let iv = parameters.withUnsafeBytes { Array($0) }
        let ciphertext = value.withUnsafeBytes { Array($0) }
        do {
            return try AES128CBC.decrypt(key: key, iv: iv, ciphertext: ciphertext)
        } catch {
            throw BusError.invalidArguments("the secret does not decrypt with this session's key")
        }
    }

    /// Opens a session: the answer to OpenSession's `input` and the session.
    /// - Throws: `BusError` NotSupported for an unknown algorithm, InvalidArgs for a bad input.
    static func open(algorithm name: String, input: BusValue, path: String, owner: String) throws -> (output: BusValue, session: TransferSession) {
        guard let algorithm = Algorithm(rawValue: name) else {
            throw BusError.notSupported("the algorithm \"\(name)\" is not supported (plain, dh-ietf1024-sha256-aes128-cbc-pkcs7)")
        }
        switch algorithm {
        case .plain:
            return (.string(""), TransferSession(path: path, owner: owner, key: nil))
        case .dh:
            guard case let .bytes(peer) = input.unwrapped, !peer.isEmpty else {
                throw BusError.invalidArguments("a dh-ietf1024-sha256-aes128-cbc-pkcs7 session needs the client's public key (ay)")
            }
            let agreement = try SecretServiceKeyAgreement()
            let key: SecureBytes
            do {
                key = try agreement.sessionKey(peerPublicKey: peer.withUnsafeBytes { Array($0) })
            } catch {
                throw BusError.invalidArguments("the client's public key is not usable")
            }
            return (.bytes(SecureBytes(copying: agreement.publicKey)), TransferSession(path: path, owner: owner, key: key))
        }
    }
}
