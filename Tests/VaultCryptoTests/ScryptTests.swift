import Foundation
import Testing
import TestScheduling
@testable import VaultCrypto

/// scrypt against RFC 7914 §12.
@Suite struct ScryptVectorTests {
    @Test func rfc7914DerivedKeysMatch() throws {
        guard let records = VectorFiles.records(.cryptography, "KDF/scrypt.txt", recordStart: "COUNT") else { return }
        var checked = 0, skippedSlow = 0
        for record in records {
            // PASSWORD and SALT are ASCII text in this file, not hex.
            let password = Array(try record.string("PASSWORD").utf8)
            let salt = Array(try record.string("SALT").utf8)
            let n = try record.int("N")
            #expect(n > 1 && n & (n - 1) == 0, "N is a power of two \(record.label)")
            let parameters = Scrypt.Parameters(logN: UInt8(n.trailingZeroBitCount),
                                               r: UInt32(try record.int("r")), p: UInt32(try record.int("p")))
            #expect(parameters.n == UInt64(n))
            if n >= 1 << 20 && !VectorFiles.slowTestsEnabled {
                print("SKIPPED: scrypt \(parameters) needs ~1 GiB and several seconds; set VAULT_SLOW_TESTS=1 to run it")
                skippedSlow += 1
                continue
            }
            let key = try Scrypt.deriveKey(password: password, salt: salt, parameters: parameters,
                                           outputByteCount: try record.int("LENGTH"))
            #expect(key.array == (try record.hex("DERIVED_KEY")), "\(record.label) \(parameters)")
            checked += 1
        }
        print("scrypt RFC 7914: \(checked) vectors (\(skippedSlow) slow skipped)")
        #expect(checked >= 3)
    }
}

/// scrypt refuses hostile parameters before doing any work.
@Suite struct ScryptBoundsTests {
    let salt = [UInt8](repeating: 0x5a, count: 32)

    /// The parameter an error names, read through `@testable` so the test does not depend on wording.
    private static func parameterName(_ error: CryptoError) -> String? {
        if case let .parameterOutOfBounds(parameter, _) = error.kind { return parameter }
        return nil
    }

    @Test(arguments: [
        (Scrypt.Parameters(logN: 0, r: 8, p: 1), "logN"),
        (Scrypt.Parameters(logN: 40, r: 8, p: 1), "logN"),
        (Scrypt.Parameters(logN: 255, r: 8, p: 1), "logN"),
        (Scrypt.Parameters(logN: 14, r: 0, p: 1), "r"),
        (Scrypt.Parameters(logN: 14, r: UInt32.max, p: 1), "r"),
        (Scrypt.Parameters(logN: 14, r: 8, p: 0), "p"),
        (Scrypt.Parameters(logN: 14, r: 8, p: 1 << 30), "p"),
        // Each inside its own range, together 2 GiB: over the 1.25 GiB memory bound.
        (Scrypt.Parameters(logN: 20, r: 16, p: 1), "memory"),
    ])
    func outOfBoundsParametersThrowBeforeWork(parameters: Scrypt.Parameters, parameter: String) {
        let used = ThreadCPUTime.measure {
            let error = #expect(throws: CryptoError.self, "\(parameters)") {
                try Scrypt.deriveKey(password: Array("pw".utf8), salt: salt, parameters: parameters, outputByteCount: 32)
            }
            #expect(error.flatMap(Self.parameterName) == parameter, "\(parameters): \(String(describing: error))")
        }
        // Refused by arithmetic, not by running scrypt and failing on memory: CPU time, which a
        // loaded machine does not inflate (scrypt with any of these would use seconds of it).
        #expect(used < .milliseconds(500), "\(parameters) used \(used) of CPU")
    }

    @Test func callerBoundsCanLowerTheMemoryCeiling() {
        let tight = Scrypt.Bounds(logN: 1...20, r: 1...32, p: 1...16, maximumMemoryBytes: 1 << 20)
        let parameters = Scrypt.Parameters(logN: 14, r: 8, p: 1) // 16 MiB
        let error = #expect(throws: CryptoError.self) {
            try Scrypt.deriveKey(password: [UInt8](), salt: salt, parameters: parameters, outputByteCount: 32, bounds: tight)
        }
        #expect(error.flatMap(Self.parameterName) == "memory")
    }

    @Test func memoryEstimateOverflowIsRefused() {
        let huge = Scrypt.Parameters(logN: 63, r: UInt32.max, p: UInt32.max)
        #expect(huge.requiredMemoryBytes == nil)
        let everything = Scrypt.Bounds(logN: 0...255, r: 0...UInt32.max, p: 0...UInt32.max, maximumMemoryBytes: UInt64.max,
                                       maximumWork: UInt64.max)
        let error = #expect(throws: CryptoError.self) {
            try Scrypt.deriveKey(password: [UInt8](), salt: salt, parameters: huge, outputByteCount: 32, bounds: everything)
        }
        #expect(error.flatMap(Self.parameterName) == "work")
    }

    @Test func workBeyondTheCapIsRefusedBeforeScryptRuns() {
        // logN 20, r 8, p 16 passes the memory bound but would run for about 90 s here.
        let slow = Scrypt.Parameters(logN: 20, r: 8, p: 16)
        var error: CryptoError?
        let used = ThreadCPUTime.measure {
            error = #expect(throws: CryptoError.self) {
                try Scrypt.deriveKey(password: [UInt8](), salt: salt, parameters: slow, outputByteCount: 32)
            }
        }
        #expect(error.flatMap(Self.parameterName) == "work")
        #expect(used < .milliseconds(500), "used \(used) of CPU: scrypt ran")
    }

    @Test(arguments: [0, 1025])
    func outputSizeOutOfRangeIsRejected(size: Int) {
        let error = #expect(throws: CryptoError.self) {
            try Scrypt.deriveKey(password: [UInt8](), salt: salt, parameters: .init(logN: 4, r: 1, p: 1), outputByteCount: size)
        }
        #expect(error.flatMap(Self.parameterName) == "outputByteCount")
    }

    @Test func samePasswordAndSaltGiveSameKeyAndOtherSaltDiffers() throws {
        let parameters = Scrypt.Parameters(logN: 10, r: 8, p: 1)
        let a = try Scrypt.deriveKey(password: Array("pw".utf8), salt: salt, parameters: parameters, outputByteCount: 32)
        let b = try Scrypt.deriveKey(password: Array("pw".utf8), salt: salt, parameters: parameters, outputByteCount: 32)
        let c = try Scrypt.deriveKey(password: Array("pw".utf8), salt: salt.reversed() + [1], parameters: parameters, outputByteCount: 32)
        #expect(a == b)
        #expect(a != c)
    }

    @Test func opensslDefaultMemoryCapDoesNotApply() throws {
        // N = 2^15, r = 8 needs 32 MiB + a little: EVP_PBE_scrypt's maxmem = 0 default (32 MiB)
        // would refuse it (SECURITY.md pitfall 4). Passing maxmem explicitly must let it run.
        let key = try Scrypt.deriveKey(password: Array("pw".utf8), salt: salt,
                                       parameters: .init(logN: 15, r: 8, p: 1), outputByteCount: 32)
        #expect(key.count == 32)
    }
}
