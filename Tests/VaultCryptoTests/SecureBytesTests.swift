import Testing
@testable import VaultCrypto

@Suite struct SecureBytesTests {
    @Test func descriptionNeverShowsBytes() {
        let secret = SecureBytes(copying: Array("hunter2-secret".utf8))
        #expect(!"\(secret)".contains("hunter2"))
        #expect(!String(reflecting: secret).contains("hunter2"))
        var dumped = ""
        dump(secret, to: &dumped)
        #expect(!dumped.contains("hunter2"))
        #expect("\(secret)".contains("14 bytes"))
    }

    @Test func equalityComparesContents() {
        #expect(SecureBytes(copying: [1, 2, 3]) == SecureBytes(copying: [1, 2, 3]))
        #expect(SecureBytes(copying: [1, 2, 3]) != SecureBytes(copying: [1, 2, 4]))
        #expect(SecureBytes(copying: [1, 2, 3]) != SecureBytes(copying: [1, 2]))
        #expect(SecureBytes.empty == SecureBytes(copying: [UInt8]()))
    }

    @Test func sliceAndAppendKeepBytes() {
        let a = SecureBytes(copying: [1, 2, 3, 4])
        #expect(a.slice(1..<3) == SecureBytes(copying: [2, 3]))
        #expect(a.appending(SecureBytes(copying: [5])) == SecureBytes(copying: [1, 2, 3, 4, 5]))
    }
}
