import FoundationEssentials

/// A time-based one-time code and the window it is valid in.
public struct OneTimeCode: Sendable, Equatable {
    /// The code: `digits` decimal digits, leading zeros kept.
    public let code: String
    /// The start of its time step.
    public let validFrom: Date
    /// The end of its time step (exclusive): the next code starts here.
    public let validUntil: Date
}
