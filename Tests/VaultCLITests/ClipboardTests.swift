#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
import TestScheduling

/// An X server without a screen (Xvfb) on a free display, for the clipboard tests; stopped by PID.
final class XvfbServer {
    let process = Process()
    let display: String

    init(xvfb: String) throws {
        let output = Pipe()
        process.executableURL = URL(fileURLWithPath: xvfb)
        // -displayfd: Xvfb picks a free display and writes its number when it is ready.
        process.arguments = ["-displayfd", "1", "-nolisten", "tcp"]
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let descriptor = output.fileHandleForReading.fileDescriptor
        var text: [UInt8] = []
        var pollDescriptor = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        let deadline = Date().addingTimeInterval(15)
        while Date() < deadline, !text.contains(0x0A) {
            guard poll(&pollDescriptor, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            guard read(descriptor, &byte, 1) == 1 else { break }
            text.append(byte)
        }
        let number = String(decoding: text, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard Int(number) != nil else {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw CLITestFailure("Xvfb did not report a display within 15 s")
        }
        display = ":" + number
    }

    func stop() {
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(5)
        while process.isRunning, Date() < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// `vault get NAME --clip` under a real X server (Xvfb) with the real xclip.
@Suite(.blockingWork) struct ClipboardTests {
    static let secret = "clip-secret-\(UUID().uuidString.prefix(8))"

    struct World {
        let sandbox: CLISandbox
        let key: [String: String]
        let xvfb: XvfbServer
        let xclip: String

        var environment: [String: String] {
            var environment = sandbox.environment.merging(key) { _, new in new }
            environment["DISPLAY"] = xvfb.display
            environment["WAYLAND_DISPLAY"] = nil
            return environment
        }

        static func make(sourceLocation: SourceLocation = #_sourceLocation) throws -> World? {
            guard let xvfb = ExternalProcess.required("Xvfb", sourceLocation: sourceLocation),
                  let xclip = ExternalProcess.required("xclip", sourceLocation: sourceLocation) else { return nil }
            let (sandbox, key) = try CLISandbox.withVault()
            let add = try sandbox.run(["add", "api"], stdin: Data(text: ClipboardTests.secret), environment: key)
            guard add.status == 0 else { throw CLITestFailure("add failed") }
            return World(sandbox: sandbox, key: key, xvfb: try XvfbServer(xvfb: xvfb), xclip: xclip)
        }

        func clipboard() throws -> String {
            try ExternalProcess.run(xclip, ["-selection", "clipboard", "-out"], environment: environment, timeout: 10).stdoutText
        }

        /// Polls the clipboard until `predicate` holds or `timeout` passes; returns the last contents.
        func waitForClipboard(timeout: Double, until predicate: (String) -> Bool) throws -> String {
            let deadline = Date().addingTimeInterval(timeout)
            var contents = try clipboard()
            while !predicate(contents), Date() < deadline {
                usleep(200_000)
                contents = try clipboard()
            }
            return contents
        }

        func cleanUp() {
            xvfb.stop()
            sandbox.cleanUp()
        }
    }

    @Test func copiesWithoutPrintingAndClearsAfterTheDelay() throws {
        guard let world = try World.make() else { return }
        defer { world.cleanUp() }
        let result = try world.sandbox.run(["get", "api", "--clip", "--clear-after", "2s"], environment: world.environment)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdout.isEmpty, "the secret is not printed")
        #expect(!result.stderr.contains(Data(text: Self.secret)))
        #expect(result.stderrText.contains("cleared in 2 s"))
        #expect(try world.clipboard() == Self.secret)
        let later = try world.waitForClipboard(timeout: 15) { $0.isEmpty }
        #expect(later.isEmpty, "the clearer emptied the clipboard")
    }

    @Test func aClipboardChangedMeanwhileIsLeftAlone() throws {
        guard let world = try World.make() else { return }
        defer { world.cleanUp() }
        #expect(try world.sandbox.run(["get", "api", "--clip", "--clear-after", "2s"], environment: world.environment).status == 0)
        #expect(try world.clipboard() == Self.secret)
        // Something else is copied (through vault: xclip -in, run from here, would linger holding
        // this process's descriptors).
        #expect(try world.sandbox.run(["add", "other"], stdin: Data(text: "something else"), environment: world.key).status == 0)
        #expect(try world.sandbox.run(["get", "other", "--clip", "--clear-after", "0s"], environment: world.environment).status == 0)
        #expect(try world.clipboard() == "something else")
        sleep(4)
        #expect(try world.clipboard() == "something else")
    }

    @Test func withoutAClipboardProgramItFailsClearly() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["add", "api"], stdin: Data(text: Self.secret), environment: key).status == 0)
        let emptyBin = sandbox.path("empty-bin")
        try FileManager.default.createDirectory(atPath: emptyBin, withIntermediateDirectories: true)
        let result = try sandbox.run(["get", "api", "--clip"], environment: key.merging(["PATH": emptyBin]) { _, new in new })
        #expect(result.status == 66)
        #expect(result.stderrText.contains("no clipboard program found"))
        #expect(result.stderrText.contains("xclip"))
        #expect(result.stdout.isEmpty)
    }

    @Test func clearAfterNeedsClip() throws {
        let (sandbox, key) = try CLISandbox.withVault()
        defer { sandbox.cleanUp() }
        #expect(try sandbox.run(["get", "api", "--clear-after", "5s"], environment: key).status == 64)
    }
}
