#if canImport(Glibc)
import Glibc
#else
#error("CredentialVaultOAuth runs on Linux (Glibc)")
#endif
import AsyncHTTPClient
import NIOCore
import NIOPosix

/// What a failed HTTP exchange means for a retry, from the HTTP client's error values.
enum TransportFailure: Equatable {
    /// The request was sent and no (whole) answer came within the deadline.
    case noAnswerInTime
    /// No connection within the deadline: nothing was sent.
    case connectTimeout
    /// The connection was refused or could not be made: nothing was sent.
    case couldNotConnect
    /// The connection broke or the answer was malformed after the request was sent.
    case brokenExchange
    /// Anything else (TLS set-up, a bad URL): treated as failing before the request was sent.
    case other

    init(_ error: any Error) {
        switch error {
        case let error as HTTPClientError:
            switch error {
            case .deadlineExceeded, .readTimeout: self = .noAnswerInTime
            case .connectTimeout: self = .connectTimeout
            case .remoteConnectionClosed, .bodyLengthMismatch, .invalidProxyResponse: self = .brokenExchange
            default: self = .other
            }
        case is NIOConnectionError:
            self = .couldNotConnect
        case let error as ChannelError where Self.isConnectTimeout(error):
            self = .connectTimeout
        case let error as IOError:
            self = error.errnoCode == ECONNREFUSED || error.errnoCode == ENETUNREACH || error.errnoCode == EHOSTUNREACH
                ? .couldNotConnect : .brokenExchange
        case is NIOTooManyBytesError:
            self = .brokenExchange
        default:
            self = .other
        }
    }

    private static func isConnectTimeout(_ error: ChannelError) -> Bool {
        if case .connectTimeout = error { return true }
        return false
    }
}
