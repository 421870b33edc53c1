import FoundationEssentials

extension SessionManager {
    /// Registers defaults for settings, the way `UserDefaults.register(defaults:)` does: a
    /// setting that was never set (or was reset by `enterGuestMode`) reads as its default.
    /// Defaults live in memory only; register them at every launch. Later calls add to or
    /// replace earlier defaults key by key.
    /// - Parameter defaults: Setting names and their default values.
    public func registerDefaults(_ defaults: [String: JSONValue]) {
        settingDefaults.merge(defaults) { _, new in new }
    }

    /// A setting: its stored value, else its registered default, else nil.
    /// - Throws: profile store errors (a corrupt profile is an error, never an empty one).
    public func setting(_ key: String) throws -> JSONValue? {
        try requireDeviceSession(.settings)
        return try profiles.load()?.settings[key] ?? settingDefaults[key]
    }

    /// Stores a setting in the plain profile; nil removes it so that it reads as its default again.
    /// Settings are not secret: they are written as plain JSON.
    /// - Throws: profile store errors; `.busy`.
    public func setSetting(_ value: JSONValue?, forKey key: String) throws {
        try requireDeviceSession(.settings)
        try profiles.update { profile in profile.settings[key] = value }
    }

    /// A Boolean setting, or nil when it is unset without a default or not a Boolean.
    public func bool(forKey key: String) throws -> Bool? { try setting(key)?.boolValue }
    /// A string setting, or nil when it is unset without a default or not a string.
    public func string(forKey key: String) throws -> String? { try setting(key)?.stringValue }
    /// A whole-number setting, or nil when it is unset without a default or not a whole number.
    public func integer(forKey key: String) throws -> Int? { try setting(key)?.intValue }
    /// A number setting, or nil when it is unset without a default or not a number.
    public func double(forKey key: String) throws -> Double? { try setting(key)?.doubleValue }

    /// Stores a Boolean setting.
    public func set(_ value: Bool, forKey key: String) throws { try setSetting(.bool(value), forKey: key) }
    /// Stores a string setting.
    public func set(_ value: String, forKey key: String) throws { try setSetting(.string(value), forKey: key) }
    /// Stores a whole-number setting.
    public func set(_ value: Int, forKey key: String) throws { try setSetting(.number(Double(value)), forKey: key) }
    /// Stores a number setting.
    public func set(_ value: Double, forKey key: String) throws { try setSetting(.number(value), forKey: key) }

    /// Every setting: the registered defaults overlaid with the stored values.
    public func allSettings() throws -> [String: JSONValue] {
        settingDefaults.merging(try profiles.load()?.settings ?? [:]) { _, stored in stored }
    }
}
