import Foundation
import Testing
import TestScheduling

/// git's own conformance cases for credential helpers (`t/t0303-credential-external.sh`, which
/// runs `helper_test` of `t/lib-credential.sh`), one test per case and named after it, against
/// the installed git and `git-credential-vault`. As in git's script, a missing credential makes
/// git ask `GIT_ASKPASS`, a script that answers `askpass-username` / `askpass-password` and
/// says what it was asked on standard error. Each test sets up the state the earlier cases of
/// the script leave behind, so each stands alone.
@Suite(.blockingWork) struct GitConformanceTests {
    /// A world with git's askpass script.
    struct Case {
        let world: GitWorld
        let askpass: String

        init?() throws {
            guard let world = try GitWorld.make() else { return nil }
            self.world = world
            askpass = world.sandbox.path("askpass")
            let script = """
                #!/bin/sh
                echo >&2 askpass: $*
                what=`echo $1 | cut -d" " -f1 | tr A-Z a-z | tr -cd a-z`
                echo "askpass-$what"

                """
            try Data(script.utf8).write(to: URL(fileURLWithPath: askpass))
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: askpass)
        }

        /// `check` of lib-credential.sh: `git credential COMMAND` with `input` on standard input;
        /// standard output and standard error must be exactly `output` and `errors`.
        func check(_ command: String, _ input: [String], output: [String] = [], errors: [String] = [],
                   configuration: [String] = [], sourceLocation: SourceLocation = #_sourceLocation) throws {
            let arguments = configuration.flatMap { ["-c", $0] } + ["credential", command]
            let result = try world.git(arguments, stdin: lines(input), environment: ["GIT_ASKPASS": askpass],
                                       sourceLocation: sourceLocation)
            #expect(result.status == 0, "git credential \(command): \(result.stderrText)", sourceLocation: sourceLocation)
            #expect(result.stdoutText == lines(output), sourceLocation: sourceLocation)
            #expect(result.stderrText == lines(errors), sourceLocation: sourceLocation)
        }

        func lines(_ lines: [String]) -> String { lines.map { $0 + "\n" }.joined() }

        func approve(_ attributes: [String]) throws { try check("approve", attributes) }

        func cleanUp() { world.sandbox.cleanUp() }
    }

    static let askpassBoth = [
        "askpass: Username for 'https://example.com': ",
        "askpass: Password for 'https://askpass-username@example.com': ",
    ].map { $0.trimmingCharacters(in: .whitespaces) }

    @Test("helper (vault) has no existing data") func hasNoExistingData() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.check("fill", ["protocol=https", "host=example.com"],
                       output: ["protocol=https", "host=example.com", "username=askpass-username", "password=askpass-password"],
                       errors: Self.askpassBoth)
    }

    @Test("helper (vault) stores password") func storesPassword() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=store-user", "password=store-pass"])
        #expect(try test.world.entryNames() == ["git:https://store-user@example.com"])
    }

    @Test("helper (vault) can retrieve password") func canRetrievePassword() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=store-user", "password=store-pass"])
        try test.check("fill", ["protocol=https", "host=example.com"],
                       output: ["protocol=https", "host=example.com", "username=store-user", "password=store-pass"])
    }

    @Test("helper (vault) requires matching protocol") func requiresMatchingProtocol() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=store-user", "password=store-pass"])
        try test.check("fill", ["protocol=http", "host=example.com"],
                       output: ["protocol=http", "host=example.com", "username=askpass-username", "password=askpass-password"],
                       errors: ["askpass: Username for 'http://example.com':", "askpass: Password for 'http://askpass-username@example.com':"])
    }

    @Test("helper (vault) requires matching host") func requiresMatchingHost() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=store-user", "password=store-pass"])
        try test.check("fill", ["protocol=https", "host=other.tld"],
                       output: ["protocol=https", "host=other.tld", "username=askpass-username", "password=askpass-password"],
                       errors: ["askpass: Username for 'https://other.tld':", "askpass: Password for 'https://askpass-username@other.tld':"])
    }

    @Test("helper (vault) requires matching username") func requiresMatchingUsername() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=store-user", "password=store-pass"])
        try test.check("fill", ["protocol=https", "host=example.com", "username=other"],
                       output: ["protocol=https", "host=example.com", "username=other", "password=askpass-password"],
                       errors: ["askpass: Password for 'https://other@example.com':"])
    }

    @Test("helper (vault) requires matching path") func requiresMatchingPath() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        let usePath = ["credential.usehttppath=true"]
        try test.check("approve", ["protocol=http", "host=path.tld", "path=foo.git", "username=user", "password=pass"],
                       configuration: usePath)
        try test.check("fill", ["protocol=http", "host=path.tld", "path=bar.git"],
                       output: ["protocol=http", "host=path.tld", "path=bar.git", "username=askpass-username", "password=askpass-password"],
                       errors: ["askpass: Username for 'http://path.tld/bar.git':",
                                "askpass: Password for 'http://askpass-username@path.tld/bar.git':"],
                       configuration: usePath)
    }

    @Test("helper (vault) can forget host") func canForgetHost() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=store-user", "password=store-pass"])
        try test.check("reject", ["protocol=https", "host=example.com"])
        try test.check("fill", ["protocol=https", "host=example.com"],
                       output: ["protocol=https", "host=example.com", "username=askpass-username", "password=askpass-password"],
                       errors: Self.askpassBoth)
    }

    @Test("helper (vault) can store multiple users") func canStoreMultipleUsers() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=user1", "password=pass1"])
        try test.approve(["protocol=https", "host=example.com", "username=user2", "password=pass2"])
        try test.check("fill", ["protocol=https", "host=example.com", "username=user1"],
                       output: ["protocol=https", "host=example.com", "username=user1", "password=pass1"])
        try test.check("fill", ["protocol=https", "host=example.com", "username=user2"],
                       output: ["protocol=https", "host=example.com", "username=user2", "password=pass2"])
    }

    @Test("helper (vault) can forget user") func canForgetUser() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=user1", "password=pass1"])
        try test.approve(["protocol=https", "host=example.com", "username=user2", "password=pass2"])
        try test.check("reject", ["protocol=https", "host=example.com", "username=user1"])
        try test.check("fill", ["protocol=https", "host=example.com", "username=user1"],
                       output: ["protocol=https", "host=example.com", "username=user1", "password=askpass-password"],
                       errors: ["askpass: Password for 'https://user1@example.com':"])
    }

    @Test("helper (vault) remembers other user") func remembersOtherUser() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=user1", "password=pass1"])
        try test.approve(["protocol=https", "host=example.com", "username=user2", "password=pass2"])
        try test.check("reject", ["protocol=https", "host=example.com", "username=user1"])
        try test.check("fill", ["protocol=https", "host=example.com", "username=user2"],
                       output: ["protocol=https", "host=example.com", "username=user2", "password=pass2"])
    }

    @Test("helper (vault) can store empty username") func canStoreEmptyUsername() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=sso.tld", "username=", "password="])
        try test.check("fill", ["protocol=https", "host=sso.tld"],
                       output: ["protocol=https", "host=sso.tld", "username=", "password="])
    }

    /// Not in t0303, and what git's own store and cache helpers do: an empty `host=` is a host
    /// (the empty one), never "any host" (`https:///repo` must not get another host's password).
    @Test func anEmptyHostNeverMatchesAnotherHost() throws {
        guard let test = try Case() else { return }
        defer { test.cleanUp() }
        try test.approve(["protocol=https", "host=example.com", "username=store-user", "password=store-pass"])
        let direct = try test.world.helper("get", "protocol=https\nhost=\n\n")
        #expect(direct.status == 0)
        #expect(!direct.stdoutText.contains("store-pass"), "\(direct.stdoutText)")
        #expect(direct.stdoutText.isEmpty)
    }
}
