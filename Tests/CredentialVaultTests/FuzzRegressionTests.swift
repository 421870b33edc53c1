import Foundation
import Testing
@testable import CredentialVault

/// Replays what the fuzzers found (`Fixtures/fuzz-regressions/<target>/`) and the seeds
/// they start from through the same entry points as `scripts/fuzz`, so a fixed crash stays
/// fixed and the harness itself keeps working without libFuzzer.
@Suite struct FuzzRegressionTests {
    static func context() throws -> FuzzContext {
        try FuzzContext(fixtures: Fixtures.root.path)
    }

    @Test func everySavedFuzzInputStillPasses() throws {
        let context = try Self.context()
        let root = try Fixtures.root.appendingPathComponent("fuzz-regressions")
        let manager = FileManager.default
        var replayed = 0, listed = 0
        for folder in try manager.contentsOfDirectory(atPath: root.path).sorted() {
            let url = root.appendingPathComponent(folder)
            var isDirectory: ObjCBool = false
            guard manager.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
                #expect(folder == "README.md", "unexpected file \(folder) in fuzz-regressions/")
                continue
            }
            guard let target = FuzzTarget(rawValue: folder) else {
                Issue.record("fuzz-regressions/\(folder) is not a fuzz target (\(FuzzTarget.allCases.map(\.rawValue)))")
                continue
            }
            for name in try manager.contentsOfDirectory(atPath: url.path).sorted() where !name.hasPrefix(".") {
                listed += 1
                let input = try Array(Data(contentsOf: url.appendingPathComponent(name)))
                do {
                    try FuzzEntryPoints.run(target, input, context: context)
                } catch {
                    Issue.record("fuzz-regressions/\(folder)/\(name): \(error)")
                }
                replayed += 1
            }
        }
        print("fuzz regressions: replayed \(replayed) saved inputs")
        #expect(replayed == listed)
    }

    @Test(arguments: FuzzTarget.allCases)
    func seedsPassThroughTheirTarget(target: FuzzTarget) throws {
        let context = try Self.context()
        let seeds = try FuzzEntryPoints.seeds(for: target, context: context)
        #expect(!seeds.isEmpty)
        for (number, seed) in seeds.enumerated() {
            do {
                try FuzzEntryPoints.run(target, seed, context: context)
            } catch {
                Issue.record("seed \(number) of \(target.rawValue): \(error)")
            }
        }
    }

    /// The harness reaches deep: the seeds are accepted where they should be, and damaged
    /// or foreign input is refused with the documented codes rather than trapped on.
    @Test func harnessAcceptsValidInputAndRefusesGarbage() throws {
        let context = try Self.context()
        let vaultSeeds = try FuzzEntryPoints.seeds(for: .vaultFile, context: context)
        // Mode 0 with the key file's golden vault, and mode 3 (index sealed by the harness).
        #expect(try FuzzEntryPoints.run(.vaultFile, [0] + context.template, context: context) == .accepted)
        #expect(try FuzzEntryPoints.run(.vaultFile, [0] + context.templateV2, context: context) == .accepted)
        #expect(try FuzzEntryPoints.run(.vaultFile, [0] + context.templateV3, context: context) == .accepted)
        // Mode 3 for every version (the last seeds are v1, v2 then v3: 2, 3, 2, 3, 2, 3); for v3 the harness
        // also puts the values layer on, so the index and value checks behind it are reached.
        let unsealed = vaultSeeds.filter { $0.first == 3 }
        #expect(unsealed.count == 3)
        #expect(unsealed.map { $0.count > 9 ? $0[9] : 0 } == [1, 2, 3], "version bytes of the mode-3 seeds")
        for seed in unsealed { #expect(try FuzzEntryPoints.run(.vaultFile, seed, context: context) == .accepted) }
        var flippedV2 = context.templateV2
        flippedV2[131] ^= 1   // index_length in the v2 header
        #expect(try FuzzEntryPoints.run(.vaultFile, [0] + flippedV2, context: context) == .rejected(.corrupt))
        // Mode 2 re-wraps the key with a fresh nonce, so the header no longer matches the index's AAD.
        #expect(try FuzzEntryPoints.run(.vaultFile, [2] + context.template, context: context) == .rejected(.tampered))
        // A flipped header byte: "damaged" in mode 0, caught by the MAC once the checksum is fixed in mode 1.
        var flipped = context.template
        flipped[130] ^= 1
        #expect(try FuzzEntryPoints.run(.vaultFile, [0] + flipped, context: context) == .rejected(.corrupt))
        #expect(try FuzzEntryPoints.run(.vaultFile, [1] + flipped, context: context) == .rejected(.tampered))

        let indexSeeds = try FuzzEntryPoints.seeds(for: .vaultIndex, context: context)
        for seed in indexSeeds { #expect(try FuzzEntryPoints.run(.vaultIndex, seed, context: context) == .accepted) }
        #expect(indexSeeds.last.map { $0[0] & 0x80 } == 0x80, "a v2 index seed")
        for seed in try FuzzEntryPoints.seeds(for: .profile, context: context) where seed.first == UInt8(ascii: "{") {
            #expect(try FuzzEntryPoints.run(.profile, seed, context: context) == .accepted)
        }
        #expect(try FuzzEntryPoints.run(.tokens, Array(Fixtures.data("token-responses/full.json")), context: context) == .accepted)
        #expect(try FuzzEntryPoints.run(.tokens, Array("e30.e30.".utf8), context: context) == .accepted)

        for length in [0, 1, 9, 189, 190, 218, 1024] {
            let garbage = [UInt8](repeating: 0xFF, count: length)
            for target in FuzzTarget.allCases where target != .byteReader {
                #expect(try FuzzEntryPoints.run(target, garbage, context: context) != .accepted, "\(target.rawValue) \(length)")
            }
        }
    }
}
