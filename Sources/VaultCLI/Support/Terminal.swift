#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CredentialVault

// The terminal settings to put back if a signal arrives while echo is off.
// `nonisolated(unsafe)` is safe: both are written on the one thread that prompts, before
// the signal handlers are installed and after they are removed; the handler only reads them.
nonisolated(unsafe) private var echoRestoreDescriptor: Int32 = -1
// Heap storage, not a global `termios`: Swift 6.3.1 emits a statically initialised global
// of an imported C struct without its interior padding (57 of termios's 60 bytes on Linux),
// so assigning to it wrote 3 bytes past it (AddressSanitizer: global-buffer-overflow).
nonisolated(unsafe) private let echoRestoreSettings: UnsafeMutablePointer<termios> = {
    let storage = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    storage.initialize(to: termios())
    return storage
}()

/// Restores the terminal and exits like the signal would have (128 + signal number).
private func restoreTerminalAndExit(_ signal: Int32) {
    if echoRestoreDescriptor >= 0 { _ = tcsetattr(echoRestoreDescriptor, TCSANOW, echoRestoreSettings) }
    _exit(128 + signal)
}

/// A terminal to prompt on: reads a line with echo off (passphrases, secrets) or on
/// (confirmations), and writes prompts. Never used unless a person is plausibly there.
final class Terminal {
    /// Where answers are read from.
    let inputDescriptor: Int32
    /// Where prompts are written.
    let outputDescriptor: Int32
    private let ownedDescriptor: Int32?

    private init(input: Int32, output: Int32, owned: Int32?) {
        self.inputDescriptor = input
        self.outputDescriptor = output
        self.ownedDescriptor = owned
    }

    deinit {
        if let ownedDescriptor { close(ownedDescriptor) }
    }

    /// The controlling terminal (`/dev/tty`), when prompting is allowed and standard input
    /// or standard error is a terminal. So a script with both redirected fails at once
    /// instead of waiting for an answer nobody will type.
    /// - Parameter allowPrompt: false for `--no-prompt`.
    /// - Returns: the terminal, or nil when there is none to ask on.
    static func controlling(allowPrompt: Bool) -> Terminal? {
        guard allowPrompt, StandardIO.isTerminal(StandardIO.input) || StandardIO.isTerminal(StandardIO.error) else { return nil }
        let descriptor = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        return Terminal(input: descriptor, output: descriptor, owned: descriptor)
    }

    /// Standard input when it is a terminal, with prompts on `/dev/tty` (or standard error).
    /// - Returns: nil when standard input is not a terminal.
    static func standardInput() -> Terminal? {
        guard StandardIO.isTerminal(StandardIO.input) else { return nil }
        let descriptor = open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC)
        if descriptor >= 0 { return Terminal(input: StandardIO.input, output: descriptor, owned: descriptor) }
        return Terminal(input: StandardIO.input, output: StandardIO.error, owned: nil)
    }

    /// Writes `text` to the terminal; failures are ignored.
    func say(_ text: String) {
        var text = TerminalText.escaped(text, keepingLineBreaks: true)
        text.withUTF8 { try? StandardIO.writeAll(UnsafeRawBufferPointer($0), to: outputDescriptor, name: "the terminal") }
    }

    /// Prompts and reads one line with echo off, into zeroising memory; the newline is not kept.
    ///
    /// Reads byte by byte in non-canonical mode, so lines longer than the kernel's 4 KiB
    /// line buffer (long JWTs) arrive whole; Backspace and Ctrl-U edit, Enter or Ctrl-D end.
    /// Ctrl-C restores the terminal and exits 130.
    /// - Parameters:
    ///   - prompt: shown before reading, e.g. "Passphrase: ".
    ///   - limit: the most bytes accepted.
    /// - Returns: the line.
    /// - Throws: `.io` when the terminal cannot be set up or read; `.invalidInput` over `limit`.
    func readHidden(prompt: String, limit: Int) throws -> SecureBytes {
        var saved = termios()
        guard tcgetattr(inputDescriptor, &saved) == 0 else {
            throw VaultError.io("reading the terminal settings", path: nil, errno: errno)
        }
        var quiet = saved
        quiet.c_lflag &= ~tcflag_t(ECHO | ICANON)
        withUnsafeMutableBytes(of: &quiet.c_cc) { controls in
            controls[Int(VMIN)] = 1
            controls[Int(VTIME)] = 0
        }
        echoRestoreDescriptor = inputDescriptor
        echoRestoreSettings.pointee = saved
        let previous = [SIGINT, SIGTERM, SIGHUP, SIGQUIT].map { ($0, signal($0, restoreTerminalAndExit)) }
        let previousStop = signal(SIGTSTP, SIG_IGN)
        defer {
            _ = tcsetattr(inputDescriptor, TCSANOW, &saved)
            for (number, handler) in previous { _ = signal(number, handler) }
            _ = signal(SIGTSTP, previousStop)
            echoRestoreDescriptor = -1
            say("\n")
        }
        // Echo goes off before the prompt shows, so nothing typed after the prompt is echoed or flushed.
        guard tcsetattr(inputDescriptor, TCSAFLUSH, &quiet) == 0 else {
            throw VaultError.io("turning off the terminal's echo", path: nil, errno: errno)
        }
        say(prompt)
        var length = 0
        let buffer = try SecureBytes(count: limit) { raw in
            length = try Self.readEditedLine(from: inputDescriptor, into: raw)
        }
        return buffer.slice(0..<length)
    }

    /// Prompts and reads one short line with echo on, e.g. a confirmation word.
    /// - Returns: the line without its newline.
    /// - Throws: `.io` when the terminal cannot be read.
    func readLine(prompt: String) throws -> String {
        say(prompt)
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 1024 {
            let count = read(inputDescriptor, &byte, 1)
            if count < 0 {
                if errno == EINTR { continue }
                throw VaultError.io("reading the terminal", path: nil, errno: errno)
            }
            if count == 0 || byte == UInt8(ascii: "\n") { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self).trimmed(of: " \r\t")
    }

    /// Reads bytes up to Enter or Ctrl-D, applying Backspace and Ctrl-U.
    private static func readEditedLine(from descriptor: Int32, into raw: UnsafeMutableRawBufferPointer) throws -> Int {
        var length = 0
        var byte: UInt8 = 0
        while true {
            let count = read(descriptor, &byte, 1)
            if count < 0 {
                if errno == EINTR { continue }
                throw VaultError.io("reading the terminal", path: nil, errno: errno)
            }
            switch count == 0 ? 0x04 : byte {
            case UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x04:
                return length
            case 0x7F, 0x08:
                // Remove one character: its UTF-8 continuation bytes, then its lead byte.
                while length > 0, raw[length - 1] & 0xC0 == 0x80 { length -= 1; raw[length] = 0 }
                if length > 0 { length -= 1; raw[length] = 0 }
            case 0x15:
                for index in 0..<length { raw[index] = 0 }
                length = 0
            default:
                guard length < raw.count else {
                    throw VaultError(.invalidInput, "the input is longer than \(raw.count) bytes")
                }
                raw[length] = byte
                length += 1
            }
        }
    }
}

extension String {
    fileprivate func trimmed(of set: String) -> String {
        var text = Substring(self)
        while let first = text.first, set.contains(first) { text.removeFirst() }
        while let last = text.last, set.contains(last) { text.removeLast() }
        return String(text)
    }
}
