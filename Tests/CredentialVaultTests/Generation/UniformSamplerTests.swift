@testable import CredentialVault
import Foundation
import Synchronization
import Testing

/// Rejection sampling: exact counts from a source that gives every byte value once.
@Suite struct UniformSamplerTests {
    /// A source that gives 0, 1, 2, … 255, 0, 1, … (or `constant` forever).
    final class CountingSource: Sendable {
        let next = Mutex<Int>(0)
        let constant: UInt8?
        init(constant: UInt8? = nil) { self.constant = constant }

        var sampler: UniformSampler {
            UniformSampler { [self] buffer in
                for index in buffer.indices {
                    buffer[index] = self.constant ?? self.next.withLock { value in
                        defer { value += 1 }
                        return UInt8(truncatingIfNeeded: value)
                    }
                }
            }
        }
        var consumed: Int { next.withLock { $0 } }
    }

    @Test func aBoundOf200TakesEveryValueExactlyOnceFromOneRoundOfBytes() throws {
        // A plain byte % 200 would give 0…55 twice and 56…199 once out of these 256 bytes.
        let source = CountingSource()
        var counts = [Int](repeating: 0, count: 200)
        for _ in 0..<200 { counts[try source.sampler.value(below: 200)] += 1 }
        #expect(counts.allSatisfy { $0 == 1 })
        #expect(source.consumed == 200)
        // The next draw meets bytes 200…255, all rejected, and lands on 0 from byte 256.
        #expect(try source.sampler.value(below: 200) == 0)
        #expect(source.consumed == 257)
    }

    @Test func aBoundOf3RejectsOnlyByte255() throws {
        let source = CountingSource()
        var counts = [0, 0, 0]
        for _ in 0..<255 { counts[try source.sampler.value(below: 3)] += 1 }
        #expect(counts == [85, 85, 85])
        #expect(source.consumed == 255)
        #expect(try source.sampler.value(below: 3) == 0) // 255 rejected, then 0
        #expect(source.consumed == 257)
    }

    @Test func theWordListBoundUsesTwoBytesAndRejectsTheTopOfTheRange() throws {
        // 65536 = 8 × 7776 + 3328: values 62208 and up are rejected.
        let top = CountingSource(constant: 0xFF)
        #expect(throws: VaultError.self) { try top.sampler.value(below: 7_776) }
        let low = CountingSource(constant: 0x01)
        #expect(try low.sampler.value(below: 7_776) == 0x0101 % 7_776)
    }

    @Test func aSourceThatOnlyGivesRejectedValuesIsAnErrorNotAHang() throws {
        let source = CountingSource(constant: 0xFF)
        #expect(throws: VaultError.self) { try source.sampler.value(below: 200) }
        #expect(try source.sampler.value(below: 1) == 0)
    }
}
