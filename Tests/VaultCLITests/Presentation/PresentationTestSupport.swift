import CredentialVault

/// A secret from text, for presentation tests.
func secret(_ text: String) -> SecureBytes { SecureBytes(copying: Array(text.utf8)) }
