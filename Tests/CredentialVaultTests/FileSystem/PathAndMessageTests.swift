import Testing
@testable import CredentialVault

@Suite struct PathAndMessageTests {
    @Test(arguments: [
        ("/a/b/vault", "/a/b", "vault"), ("vault", ".", "vault"), ("/vault", "/", "vault"),
        ("a/vault/", "a", "vault"), ("./v", ".", "v"), ("//x", "/", "x"),
    ])
    func splitsPaths(path: String, directory: String, name: String) throws {
        let parts = try SplitPath(path)
        #expect(parts.directory == directory)
        #expect(parts.name == name)
    }

    @Test(arguments: ["", "/", "a/..", ".", "a/."])
    func rejectsPathsWithoutFileName(path: String) {
        #expect(throws: VaultError.self) { try SplitPath(path) }
    }

    @Test func fixTextQuotesPathsForTheShell() {
        #expect(VaultError.shellQuoted("/home/me/.vault") == "/home/me/.vault")
        #expect(VaultError.shellQuoted("/home/my vault") == "'/home/my vault'")
        #expect(VaultError.shellQuoted("/it's") == "'/it'\\''s'")
        #expect(VaultError.shellQuoted("$(rm -rf ~)") == "'$(rm -rf ~)'")
    }

    @Test func everyFileSystemErrorHasMessagePathAndFix() {
        let errors: [VaultError] = [
            .fileNotFound("/p"), .fileNotFound("/p", isDirectory: true), .symbolicLink("/p"),
            .wrongFileType("/p", expected: "a directory"), .wrongOwner("/p", owner: 65534),
            .groupOrWorldAccess("/p", mode: 0o100640, isDirectory: false), .multipleLinks("/p", count: 2),
            .fileTooLarge("/p", limit: 10),
        ]
        for error in errors {
            #expect(!error.message.isEmpty)
            #expect(error.path == "/p")
            #expect(!(error.fix ?? "").isEmpty)
        }
        #expect(VaultError.groupOrWorldAccess("/p", mode: 0o100640, isDirectory: false).message.contains("0640"))
    }
}
