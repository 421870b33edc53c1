// The libFuzzer harness for every target in `FuzzTarget`. Not part of the package: it is
// compiled only by `scripts/fuzz`, with `swiftc -sanitize=fuzzer,address`, against the
// package's modules built with the same instrumentation.
//
// Environment (set by scripts/fuzz):
//   VAULT_FUZZ_TARGET       the target, e.g. "vault-file" (see `FuzzTarget`)
//   VAULT_FUZZ_FIXTURES     Tests/CredentialVaultTests/Fixtures
//   VAULT_FUZZ_WRITE_SEEDS  optional: write the target's seeds into this folder and exit
import Foundation
@testable import CredentialVault

/// Set once in `LLVMFuzzerInitialize`, before libFuzzer calls `LLVMFuzzerTestOneInput`;
/// libFuzzer runs inputs on one thread, so there is no concurrent access.
nonisolated(unsafe) private var fuzzTarget = FuzzTarget.vaultFile
nonisolated(unsafe) private var fuzzContext: FuzzContext?

private func stop(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("vault-fuzz: " + message + "\n").utf8))
    exit(2)
}

@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<Int32>,
                             _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> Int32 {
    let environment = ProcessInfo.processInfo.environment
    guard let name = environment["VAULT_FUZZ_TARGET"], let target = FuzzTarget(rawValue: name) else {
        stop("set VAULT_FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue))")
    }
    guard let fixtures = environment["VAULT_FUZZ_FIXTURES"] else { stop("set VAULT_FUZZ_FIXTURES") }
    do {
        fuzzTarget = target
        let context = try FuzzContext(fixtures: fixtures)
        fuzzContext = context
        if let folder = environment["VAULT_FUZZ_WRITE_SEEDS"] {
            for (number, seed) in try FuzzEntryPoints.seeds(for: target, context: context).enumerated() {
                try Data(seed).write(to: URL(fileURLWithPath: folder).appendingPathComponent("seed-\(number)"))
            }
            exit(0)
        }
    } catch {
        stop("cannot prepare the \(name) target: \(error)")
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let context = fuzzContext else { stop("LLVMFuzzerInitialize did not run") }
    let input = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    do {
        try FuzzEntryPoints.run(fuzzTarget, input, context: context)
    } catch {
        // A broken property: crash, so libFuzzer saves the input as an artifact.
        fatalError("fuzz finding in \(fuzzTarget.rawValue): \(error)")
    }
    return 0
}
