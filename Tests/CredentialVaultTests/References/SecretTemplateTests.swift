import Testing
@testable import CredentialVault
import VaultCrypto

@Suite("SecretTemplate")
struct SecretTemplateTests {
    private static func render(_ text: String, _ secrets: [String: String]) throws -> String {
        let template = try SecretTemplate(Array(text.utf8), path: "t")
        var values: [SecretReference: SecureBytes] = [:]
        for placeholder in template.placeholders {
            values[placeholder.reference] = SecureBytes(copying: Array((secrets[placeholder.reference.name] ?? "?").utf8))
        }
        return try template.rendered(with: values).withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    @Test func placeholdersInEveryPositionAreFilled() throws {
        let text = "{{vault://a}}start\nmiddle {{ vault://b }} and {{\tvault://a\t}}\n"
            + "adjacent{{vault://a}}{{vault://b}}\nkey: \"{{ vault://db/password }}\"\nend {{ vault://b?owner=user:u-1 }}"
        let result = try Self.render(text, ["a": "A1", "b": "B2", "db/password": "p@ss"])
        #expect(result == "A1start\nmiddle B2 and A1\nadjacentA1B2\nkey: \"p@ss\"\nend B2")
    }

    @Test func otherBracesPassThroughUntouched() throws {
        let text = "{{ .Values.image }} {{- if .x }}{{ end }} {{{ vault://a }}} {{ \"vault://a\" }} vault://a {{vault:/a}} {{ }} {{"
        let result = try Self.render(text, ["a": "S"])
        #expect(result == "{{ .Values.image }} {{- if .x }}{{ end }} {S} {{ \"vault://a\" }} vault://a {{vault:/a}} {{ }} {{")
    }

    @Test func bytesThatAreNotUTF8PassThrough() throws {
        let bytes: [UInt8] = [0xFF, 0x00] + Array("{{ vault://a }}".utf8) + [0xFE]
        let template = try SecretTemplate(bytes, path: "t")
        let reference = try #require(template.placeholders.first?.reference)
        let result = try template.rendered(with: [reference: SecureBytes(copying: Array("x".utf8))])
        #expect(result.withUnsafeBytes { Array($0) } == [0xFF, 0x00, UInt8(ascii: "x"), 0xFE])
    }

    @Test func linesAreCounted() throws {
        let template = try SecretTemplate(Array("a\nb\n{{ vault://x }}\n\n{{vault://y}}".utf8), path: "t")
        #expect(template.placeholders.map(\.line) == [3, 5])
    }

    @Test(arguments: ["{{ vault://a", "{{ vault://a }", "{{ vault://a\n}}", "x\n{{ vault://a#b }}", "{{ vault://a?x=1 }}", "{{ vault:// }}"])
    func aBrokenPlaceholderIsRefusedWithItsLine(text: String) {
        let error = #expect(throws: VaultError.self) { try SecretTemplate(Array(text.utf8), path: "tpl") }
        #expect(error?.code == .invalidInput)
        #expect(error?.message.contains("tpl, line") == true)
    }

    @Test func aMissingSecretIsAnError() throws {
        let template = try SecretTemplate(Array("{{ vault://a }}".utf8), path: "t")
        #expect(throws: VaultError.self) { try template.rendered(with: [:]) }
    }
}
