import Testing
@testable import CredentialVault
import VaultCrypto

@Suite("SecretMasker")
struct SecretMaskerTests {
    private static let marker = String(decoding: SecretMasker.marker, as: UTF8.self)

    private static func masked(_ pieces: [String], secrets: [String]) -> String {
        var masker = SecretMasker(values: secrets.map { SecureBytes(copying: Array($0.utf8)) })
        var output: [UInt8] = []
        for piece in pieces { output += masker.feed(Array(piece.utf8)) }
        output += masker.finish()
        return String(decoding: output, as: UTF8.self)
    }

    @Test func aWholeSecretIsReplaced() {
        #expect(Self.masked(["token=hunter22 and hunter22\n"], secrets: ["hunter22"]) == "token=\(Self.marker) and \(Self.marker)\n")
    }

    @Test func aSecretSplitAcrossReadsIsReplaced() {
        let secret = "s3cr3t-value"
        let text = "a \(secret) b \(secret)"
        for split in 1..<text.utf8.count {
            let bytes = Array(text.utf8)
            let pieces = [String(decoding: bytes[..<split], as: UTF8.self), String(decoding: bytes[split...], as: UTF8.self)]
            #expect(Self.masked(pieces, secrets: [secret]) == "a \(Self.marker) b \(Self.marker)", "split at \(split)")
        }
    }

    @Test func aSecretWrittenOneByteAtATimeIsReplaced() {
        let pieces = "x-hunter22-y".map { String($0) }
        #expect(Self.masked(pieces, secrets: ["hunter22"]) == "x-\(Self.marker)-y")
    }

    @Test func onlyATailThatCouldStartASecretIsHeldBack() {
        var masker = SecretMasker(values: [SecureBytes(copying: Array("password123".utf8))])
        #expect(masker.feed(Array("Enter pass".utf8)) == Array("Enter ".utf8))
        #expect(masker.feed(Array("phrase: ".utf8)) == Array("passphrase: ".utf8))
        #expect(masker.feed(Array("ok".utf8)) == Array("ok".utf8), "nothing held when no secret could start")
        #expect(masker.feed(Array("pass".utf8)) == [])
        #expect(masker.finish() == Array("pass".utf8), "a prefix that never became the secret comes out at the end")
    }

    @Test func aLongerSecretStartingWithAShorterOneIsMaskedWhole() {
        #expect(Self.masked(["abcd", "XYZ!"], secrets: ["abcd", "abcdXYZ!"]) == Self.marker)
        #expect(Self.masked(["abcd", "-"], secrets: ["abcd", "abcdXYZ!"]) == "\(Self.marker)-")
        #expect(Self.masked(["abcd"], secrets: ["abcd", "abcdXYZ!"]) == Self.marker)
    }

    @Test func shortValuesAreNotMasked() {
        #expect(Self.masked(["a abc b"], secrets: ["abc", ""]) == "a abc b")
    }

    @Test func multiLineAndBinarySecretsAreReplaced() {
        #expect(Self.masked(["-line1\nli", "ne2-"], secrets: ["line1\nline2"]) == "-\(Self.marker)-")
    }

    @Test func overlappingSecretsAreHiddenWhole() {
        // "key1" ends where "1-token-abcdef" begins: neither may leave part of the other visible.
        let secrets = ["key1", "1-token-abcdef"]
        #expect(Self.masked(["key1-token-abcdef\n"], secrets: secrets) == "\(Self.marker)\n")
        #expect(Self.masked("key1-token-abcdef\n".map { String($0) }, secrets: secrets) == "\(Self.marker)\n")
        #expect(Self.masked(["a key1 b"], secrets: secrets) == "a \(Self.marker) b")
    }
}
