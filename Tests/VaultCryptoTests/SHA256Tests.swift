import Foundation
import Testing
import VaultCrypto

/// SHA-256 against NIST CAVP SHAVS byte-oriented files.
@Suite struct SHA256VectorTests {
    @Test(arguments: ["hashes/SHA2/SHA256ShortMsg.rsp", "hashes/SHA2/SHA256LongMsg.rsp"])
    func cavpDigestsMatch(file: String) throws {
        guard let records = VectorFiles.records(.cryptography, file, recordStart: "Len") else { return }
        var checked = 0
        for record in records {
            let bits = try record.int("Len")
            #expect(bits % 8 == 0, "byte-oriented \(record.label)")
            // Len = 0 is written as "Msg = 00": Len, not the hex, gives the length.
            let message = Array(try record.hex("Msg").prefix(bits / 8))
            #expect(message.count == bits / 8, "\(record.label)")
            #expect(try SHA256.hash(message) == record.hex("MD"), "\(record.label)")
            checked += 1
        }
        print("SHA-256 CAVP \(URL(fileURLWithPath: file).lastPathComponent): \(checked) vectors")
        #expect(checked >= 60)
    }
}
