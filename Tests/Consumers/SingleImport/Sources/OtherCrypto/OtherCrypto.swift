// Names swift-crypto uses, declared by a module the app also imports.
public enum SHA256 { public static let origin = "OtherCrypto" }
public enum HMAC { public static let origin = "OtherCrypto" }
public struct SymmetricKey { public init() {} }
public enum AES256GCM { public static let origin = "OtherCrypto" }
