@testable import CredentialVault
import Testing

/// The documented reading order (docs/FORMAT.md): magic, then the major version, then the
/// header's size. A file that ends right after an unknown major version is "unsupported
/// version", as an independent reader written from the spec reports it.
@Suite struct HeaderReadingOrderTests {
    static func code(_ file: [UInt8]) -> VaultError.Code? {
        do {
            _ = try VaultFileHeader.parse(file, path: nil)
            return nil
        } catch let error as VaultError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test func anUnknownMajorVersionIsReportedBeforeTheHeaderEndsEarly() {
        let magic = VaultFileLayout.magic
        #expect(Self.code(magic + [4]) == .unsupportedVersion)
        #expect(Self.code(magic + [4, 0]) == .unsupportedVersion)
        #expect(Self.code(magic + [3]) == .corrupt, "a known major (3): the header ends early")
        #expect(Self.code(magic + [0]) == .unsupportedVersion)
        #expect(Self.code(magic + [2]) == .corrupt, "a known major: the header ends early")
        #expect(Self.code(magic + [2, 0, 0, 0]) == .corrupt)
        #expect(Self.code(magic) == .corrupt)
        #expect(Self.code(Array(magic.dropLast())) == .corrupt)
    }
}
