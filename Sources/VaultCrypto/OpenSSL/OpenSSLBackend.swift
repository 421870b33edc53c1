internal import COpenSSL
internal import CVaultCryptoShims

/// The one place where VaultCrypto calls libcrypto. Every return code is
/// checked right after the call; failures drain OpenSSL's error queue into a
/// `CryptoError` whose text never contains key or plaintext bytes.
enum OpenSSLBackend {
    static let aesKeyByteCount = Int(VAULT_AES256GCM_KEY_BYTES)
    static let aesNonceByteCount = Int(VAULT_AES256GCM_NONCE_BYTES)
    static let aesTagByteCount = Int(VAULT_AES256GCM_TAG_BYTES)

    /// The linked library's version text (`OpenSSL_version(OPENSSL_VERSION)`).
    static var versionText: String {
        guard let text = OpenSSL_version(OPENSSL_VERSION) else { return "unknown" }
        return String(cString: text)
    }

    /// `vault_crypto_init_for_command`: configuration loaded, error texts not (`CryptoLibrary`).
    static func initializeForCommandLine() -> Bool {
        vault_crypto_init_for_command() == VAULT_SHIM_OK
    }

    /// Reads and clears OpenSSL's error queue (`ERR_get_error`, `ERR_error_string_n`).
    static func drainErrors(operation: String) -> CryptoError {
        var messages: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            let end = buffer.firstIndex(of: 0) ?? buffer.count
            messages.append(String(decoding: buffer[..<end].map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        return .openSSL(operation: operation, detail: messages.isEmpty ? "no detail in the error queue" : messages.joined(separator: "; "))
    }

    // MARK: Memory

    /// Wipes `buffer` (`vault_secure_zero`: `explicit_bzero`, or `OPENSSL_cleanse` without glibc 2.25).
    static func secureZero(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        vault_secure_zero(base.assumingMemoryBound(to: UInt8.self), buffer.count)
    }

    /// Compares two equally long buffers in constant time (`CRYPTO_memcmp`).
    static func constantTimeEquals(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0, let pa = a.baseAddress, let pb = b.baseAddress else { return true }
        return vault_constant_time_compare(pa.assumingMemoryBound(to: UInt8.self), pb.assumingMemoryBound(to: UInt8.self), a.count) == 0
    }

    // MARK: Process

    /// `vault_disable_core_dumps`: setrlimit(RLIMIT_CORE, 0) and prctl(PR_SET_DUMPABLE, 0).
    static func disableCoreDumps() -> Bool {
        vault_disable_core_dumps() == 0
    }

    /// `vault_posix_acl_access`: fgetxattr(fd, "system.posix_acl_access"); the byte count, or -1.
    static func posixAccessACL(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        vault_posix_acl_access(descriptor, buffer.baseAddress, UInt(buffer.count))
    }

    // MARK: Random

    /// Fills `buffer` from the DRBG (`RAND_bytes`); a failure throws, never leaves zeros.
    static func randomFill(_ buffer: UnsafeMutableRawBufferPointer) throws {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        guard buffer.count <= Int(Int32.max) else { throw CryptoError.invalidInputSize(what: "random request", actual: buffer.count) }
        guard RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1 else {
            secureZero(buffer)
            _ = drainErrors(operation: "RAND_bytes")
            throw CryptoError.randomGenerationFailed
        }
    }

    // MARK: AES-256-GCM

    /// XORs `input` with the AES-256-CTR key stream into `output` (`vault_aes256ctr_xor`).
    static func aesCTRXor(key: UnsafeRawBufferPointer, counterBlock: UnsafeRawBufferPointer,
                          input: UnsafeRawBufferPointer, output: UnsafeMutableRawBufferPointer) throws {
        precondition(key.count == aesKeyByteCount && counterBlock.count == 16, "sizes are validated by AES256CTR before reaching the backend")
        precondition(output.count >= input.count, "output buffer too small")
        let rc = vault_aes256ctr_xor(u8(key), u8(counterBlock), u8(input), input.count,
                                     output.baseAddress?.assumingMemoryBound(to: UInt8.self))
        guard rc == VAULT_SHIM_OK else { throw drainErrors(operation: "AES-256-CTR") }
    }

    /// Encrypts with `vault_aes256gcm_seal` (EVP_EncryptInit_ex and friends).
    static func aesGCMSeal(key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
                           plaintext: UnsafeRawBufferPointer, ciphertext: UnsafeMutableRawBufferPointer,
                           tag: UnsafeMutableRawBufferPointer) throws {
        precondition(key.count == aesKeyByteCount && nonce.count == aesNonceByteCount && tag.count == aesTagByteCount,
                     "sizes are validated by AES256GCM before reaching the backend")
        precondition(ciphertext.count >= plaintext.count, "ciphertext buffer too small")
        let rc = vault_aes256gcm_seal(
            u8(key), u8(nonce), u8(aad), aad.count, u8(plaintext), plaintext.count,
            ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self),
            tag.baseAddress?.assumingMemoryBound(to: UInt8.self))
        guard rc == VAULT_SHIM_OK else { throw drainErrors(operation: "AES-256-GCM seal") }
    }

    /// Decrypts with `vault_aes256gcm_open`; `plaintext` is wiped unless the tag verifies.
    static func aesGCMOpen(key: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
                           ciphertext: UnsafeRawBufferPointer, tag: UnsafeRawBufferPointer,
                           plaintext: UnsafeMutableRawBufferPointer) throws {
        precondition(key.count == aesKeyByteCount && nonce.count == aesNonceByteCount && tag.count == aesTagByteCount,
                     "sizes are validated by AES256GCM before reaching the backend")
        precondition(plaintext.count >= ciphertext.count, "plaintext buffer too small")
        let rc = vault_aes256gcm_open(
            u8(key), u8(nonce), u8(aad), aad.count, u8(ciphertext), ciphertext.count, u8(tag),
            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self))
        switch rc {
        case VAULT_SHIM_OK:
            return
        case VAULT_SHIM_AUTH_FAILED:
            ERR_clear_error()
            throw CryptoError.authenticationFailure
        default:
            throw drainErrors(operation: "AES-256-GCM open")
        }
    }

    // MARK: Hashes, MACs and KDFs

    /// SHA-512 (`EVP_Digest` with `EVP_sha512`).
    static func sha512(_ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws {
        precondition(out.count == 64, "SHA-512 output is 64 bytes")
        var length: UInt32 = 0
        guard EVP_Digest(data.baseAddress, data.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, EVP_sha512(), nil) == 1,
              length == 64 else {
            throw drainErrors(operation: "SHA-512")
        }
    }

    /// SHA-256 (`EVP_Digest` with `EVP_sha256`).
    static func sha256(_ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws {
        precondition(out.count == 32, "SHA-256 output is 32 bytes")
        var length: UInt32 = 0
        guard EVP_Digest(data.baseAddress, data.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length, EVP_sha256(), nil) == 1,
              length == 32 else {
            throw drainErrors(operation: "SHA-256")
        }
    }

    /// HMAC-SHA256 (one-shot `HMAC`).
    static func hmacSHA256(key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws {
        precondition(out.count == 32, "HMAC-SHA256 output is 32 bytes")
        guard key.count <= Int(Int32.max) else { throw CryptoError.invalidInputSize(what: "HMAC key", actual: key.count) }
        var length: UInt32 = 0
        var empty: UInt8 = 0
        let result = withUnsafeMutablePointer(to: &empty) { emptyPointer in
            HMAC(EVP_sha256(), key.baseAddress ?? UnsafeRawPointer(emptyPointer), Int32(key.count),
                 u8(data) ?? UnsafePointer(emptyPointer), data.count,
                 out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        }
        guard result != nil, length == 32 else { throw drainErrors(operation: "HMAC-SHA256") }
    }

    /// The digests an HMAC is computed over (`EVP_sha1`, `EVP_sha256`, `EVP_sha512`).
    enum HMACDigest: Sendable {
        case sha1, sha256, sha512

        /// The tag length in bytes.
        var byteCount: Int {
            switch self {
            case .sha1: 20
            case .sha256: 32
            case .sha512: 64
            }
        }

        var name: String {
            switch self {
            case .sha1: "HMAC-SHA1"
            case .sha256: "HMAC-SHA256"
            case .sha512: "HMAC-SHA512"
            }
        }

        fileprivate var evp: OpaquePointer? {
            switch self {
            case .sha1: EVP_sha1()
            case .sha256: EVP_sha256()
            case .sha512: EVP_sha512()
            }
        }
    }

    /// HMAC over `digest` (one-shot `HMAC`); `out` must be `digest.byteCount` bytes.
    static func hmac(_ digest: HMACDigest, key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer,
                     into out: UnsafeMutableRawBufferPointer) throws {
        precondition(out.count == digest.byteCount, "\(digest.name) output is \(digest.byteCount) bytes")
        guard key.count <= Int(Int32.max) else { throw CryptoError.invalidInputSize(what: "HMAC key", actual: key.count) }
        var length: UInt32 = 0
        var empty: UInt8 = 0
        let result = withUnsafeMutablePointer(to: &empty) { emptyPointer in
            HMAC(digest.evp, key.baseAddress ?? UnsafeRawPointer(emptyPointer), Int32(key.count),
                 u8(data) ?? UnsafePointer(emptyPointer), data.count,
                 out.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        }
        guard result != nil, Int(length) == digest.byteCount else { throw drainErrors(operation: digest.name) }
    }

    /// HKDF-SHA256 modes, matching `EVP_KDF_HKDF_MODE_*`.
    enum HKDFMode: Int32 {
        case extractAndExpand = 0
        case extractOnly = 1
        case expandOnly = 2
    }

    /// HKDF-SHA256 through `EVP_KDF "HKDF"`.
    static func hkdfSHA256(mode: HKDFMode, key: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer,
                           info: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) throws {
        let rc = vault_hkdf_sha256(mode.rawValue, u8(key), key.count, u8(salt), salt.count, u8(info), info.count,
                                   out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count)
        guard rc == VAULT_SHIM_OK else { throw drainErrors(operation: "HKDF-SHA256") }
    }

    /// scrypt through `EVP_PBE_scrypt`, always with an explicit `maxmem`.
    static func scrypt(password: UnsafeRawBufferPointer, salt: UnsafeRawBufferPointer,
                       n: UInt64, r: UInt64, p: UInt64, maxMemory: UInt64,
                       into out: UnsafeMutableRawBufferPointer) throws {
        var empty: UInt8 = 0
        let rc = withUnsafeMutablePointer(to: &empty) { emptyPointer in
            EVP_PBE_scrypt(
                password.baseAddress.map { $0.assumingMemoryBound(to: CChar.self) }
                    ?? UnsafeRawPointer(emptyPointer).assumingMemoryBound(to: CChar.self),
                password.count,
                u8(salt) ?? UnsafePointer(emptyPointer), salt.count,
                n, r, p, maxMemory,
                out.baseAddress?.assumingMemoryBound(to: UInt8.self), out.count)
        }
        guard rc == 1 else { throw drainErrors(operation: "scrypt") }
    }

    // MARK: JWS signatures

    /// The result of `vault_jws_verify`.
    enum SignatureCheck { case valid, invalid, keyRefused }

    /// `vault_jws_verify`: `algorithm` is one of `VAULT_JWS_*`; `a`, `b` the key's members.
    static func jwsVerify(algorithm: Int32, a: UnsafeRawBufferPointer, b: UnsafeRawBufferPointer,
                          message: UnsafeRawBufferPointer, signature: UnsafeRawBufferPointer) throws -> SignatureCheck {
        let rc = vault_jws_verify(algorithm, u8(a), a.count, u8(b), b.count, u8(message), message.count,
                                  u8(signature), signature.count)
        switch rc {
        case VAULT_SHIM_OK: return .valid
        case VAULT_SHIM_AUTH_FAILED: return .invalid
        case VAULT_SHIM_KEY_REFUSED: return .keyRefused
        default: throw drainErrors(operation: "signature verification")
        }
    }

    static var jwsRS256: Int32 { VAULT_JWS_RS256 }
    static var jwsPS256: Int32 { VAULT_JWS_PS256 }
    static var jwsES256: Int32 { VAULT_JWS_ES256 }
    static var jwsEdDSA: Int32 { VAULT_JWS_EDDSA }

    /// `vault_p256_generate`: a new key pair into three 32-byte buffers.
    static func p256Generate(d: UnsafeMutableRawBufferPointer, x: UnsafeMutableRawBufferPointer,
                             y: UnsafeMutableRawBufferPointer) throws {
        precondition(d.count == 32 && x.count == 32 && y.count == 32, "P-256 members are 32 bytes")
        guard vault_p256_generate(d.baseAddress?.assumingMemoryBound(to: UInt8.self), x.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                  y.baseAddress?.assumingMemoryBound(to: UInt8.self)) == VAULT_SHIM_OK else {
            throw drainErrors(operation: "P-256 key generation")
        }
    }

    /// `vault_es256_sign`: the raw r‖s of an ES256 signature into `signature` (64 bytes).
    static func es256Sign(d: UnsafeRawBufferPointer, x: UnsafeRawBufferPointer, y: UnsafeRawBufferPointer,
                          message: UnsafeRawBufferPointer, signature: UnsafeMutableRawBufferPointer) throws {
        precondition(d.count == 32 && x.count == 32 && y.count == 32 && signature.count == 64, "sizes are validated by P256SigningKey")
        let rc = vault_es256_sign(u8(d), u8(x), u8(y), u8(message), message.count,
                                  signature.baseAddress?.assumingMemoryBound(to: UInt8.self))
        if rc == VAULT_SHIM_KEY_REFUSED { throw CryptoError.unusableKey("the P-256 private key does not match its public point") }
        guard rc == VAULT_SHIM_OK else { throw drainErrors(operation: "ES256 signing") }
    }

    // MARK: Secret Service session crypto

    /// The RFC 2409 second Oakley group's prime size in bytes (`VAULT_DH_MODP1024_BYTES`).
    static let dhModp1024ByteCount = Int(VAULT_DH_MODP1024_BYTES)
    /// The longest peer public value accepted, leading zeros included.
    static let dhModp1024MaximumPeerByteCount = Int(VAULT_DH_MODP1024_MAX_PEER_BYTES)
    /// AES-128-CBC's key size and block (and IV) size.
    static let aes128KeyByteCount = Int(VAULT_AES128CBC_KEY_BYTES)
    static let aes128BlockByteCount = Int(VAULT_AES128CBC_BLOCK_BYTES)

    /// A Diffie-Hellman key pair of the RFC 2409 second Oakley group held by libcrypto
    /// (an `EVP_PKEY`), freed with `EVP_PKEY_free` (which clears the private value) on deinit.
    final class DHKeyPair: @unchecked Sendable {
        // Safe to share: the key is never changed after init; OpenSSL 3 allows concurrent
        // EVP_PKEY_derive calls on one const key, each with its own EVP_PKEY_CTX.
        fileprivate let pointer: OpaquePointer

        fileprivate init(_ pointer: OpaquePointer) { self.pointer = pointer }

        deinit { vault_dh_free(pointer) }
    }

    /// A fresh key pair (`vault_dh_modp1024_generate`: EVP_PKEY_keygen).
    static func dhModp1024Generate() throws -> DHKeyPair {
        guard let pointer = vault_dh_modp1024_generate() else { throw drainErrors(operation: "Diffie-Hellman key generation") }
        return DHKeyPair(pointer)
    }

    /// The key pair of a given private value (`vault_dh_modp1024_from_private`), for known answers.
    static func dhModp1024KeyPair(privateKey: UnsafeRawBufferPointer) throws -> DHKeyPair {
        guard let pointer = vault_dh_modp1024_from_private(u8(privateKey), privateKey.count) else {
            _ = drainErrors(operation: "Diffie-Hellman key import")
            throw CryptoError.unusableKey("a Diffie-Hellman private value must be 0 < x < q")
        }
        return DHKeyPair(pointer)
    }

    /// The public value, big-endian without leading zeros (`vault_dh_modp1024_public_key`).
    static func dhModp1024PublicKey(_ key: DHKeyPair) throws -> [UInt8] {
        var length = 0
        let bytes = try [UInt8](unsafeUninitializedCapacity: dhModp1024ByteCount) { buffer, initialized in
            guard let base = buffer.baseAddress,
                  vault_dh_modp1024_public_key(key.pointer, base, &length) == VAULT_SHIM_OK, length <= buffer.count else {
                initialized = 0
                throw drainErrors(operation: "Diffie-Hellman public key export")
            }
            initialized = length
        }
        return bytes
    }

    /// The shared secret padded to 128 bytes into `secret` (`vault_dh_modp1024_derive`).
    /// - Throws: `CryptoError.unusableKey` for a peer value outside the group.
    static func dhModp1024Derive(_ key: DHKeyPair, peer: UnsafeRawBufferPointer, into secret: UnsafeMutableRawBufferPointer) throws {
        precondition(secret.count == dhModp1024ByteCount, "the shared secret is as long as the prime")
        let rc = vault_dh_modp1024_derive(key.pointer, u8(peer), peer.count, secret.baseAddress?.assumingMemoryBound(to: UInt8.self))
        switch rc {
        case VAULT_SHIM_OK:
            return
        case VAULT_SHIM_KEY_REFUSED:
            ERR_clear_error()
            throw CryptoError.unusableKey("the peer's Diffie-Hellman public value (\(peer.count) bytes) is not in the group: "
                                          + "it must be 1 < y < p - 1 in the subgroup of order (p - 1) / 2, at most "
                                          + "\(dhModp1024MaximumPeerByteCount) bytes with leading zeros")
        default:
            throw drainErrors(operation: "Diffie-Hellman key agreement")
        }
    }

    /// AES-128-CBC with PKCS#7 padding (`vault_aes128cbc_encrypt`); `output` holds input + 16 bytes.
    /// - Returns: The number of ciphertext bytes written.
    static func aes128CBCEncrypt(key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer, plaintext: UnsafeRawBufferPointer,
                                 into output: UnsafeMutableRawBufferPointer) throws -> Int {
        precondition(key.count == aes128KeyByteCount && iv.count == aes128BlockByteCount, "sizes are validated by AES128CBC")
        precondition(output.count >= plaintext.count + aes128BlockByteCount, "output buffer too small")
        var length = 0
        let rc = vault_aes128cbc_encrypt(u8(key), u8(iv), u8(plaintext), plaintext.count,
                                         output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        guard rc == VAULT_SHIM_OK, length <= output.count else { throw drainErrors(operation: "AES-128-CBC encryption") }
        return length
    }

    /// AES-128-CBC decryption with PKCS#7 padding (`vault_aes128cbc_decrypt`); `output` holds
    /// input + 16 bytes and is wiped on failure.
    /// - Returns: The number of plaintext bytes written.
    /// - Throws: `CryptoError.invalidPadding` for a bad length or padding.
    static func aes128CBCDecrypt(key: UnsafeRawBufferPointer, iv: UnsafeRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
                                 into output: UnsafeMutableRawBufferPointer) throws -> Int {
        precondition(key.count == aes128KeyByteCount && iv.count == aes128BlockByteCount, "sizes are validated by AES128CBC")
        precondition(output.count >= ciphertext.count + aes128BlockByteCount, "output buffer too small")
        var length = 0
        let rc = vault_aes128cbc_decrypt(u8(key), u8(iv), u8(ciphertext), ciphertext.count,
                                         output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length)
        switch rc {
        case VAULT_SHIM_OK where length <= ciphertext.count:
            return length
        case VAULT_SHIM_AUTH_FAILED:
            ERR_clear_error()
            throw CryptoError.invalidPadding
        default:
            secureZero(output)
            throw drainErrors(operation: "AES-128-CBC decryption")
        }
    }

    private static func u8(_ buffer: UnsafeRawBufferPointer) -> UnsafePointer<UInt8>? {
        guard buffer.count > 0 else { return nil }
        return buffer.baseAddress?.assumingMemoryBound(to: UInt8.self)
    }
}
