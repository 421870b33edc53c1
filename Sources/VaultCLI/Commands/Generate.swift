import ArgumentParser
import CredentialVault

extension VaultCommand {
    /// `vault generate`: a random password or passphrase on standard output.
    struct Generate: ContextCommand {
        static let configuration = CommandConfiguration(
            commandName: "generate",
            abstract: "Print a random password, or a passphrase with --words, from OpenSSL's random generator.",
            discussion: """
                Each character or word is drawn without bias (rejection sampling). A password holds at \
                least one character of each class asked for: one that misses a class is thrown away \
                whole and drawn again, so every password that qualifies is equally likely.

                Entropy: a password has length × log2(character set size) bits (24 characters of all \
                four classes: 94 characters, ≈ 157 bits; less than 0.3 bit lost to the one-of-each rule). \
                A passphrase has words × log2(7776) ≈ 12.9 bits per word (6 words ≈ 77.5 bits), whatever \
                the separator.

                The secret alone goes to standard output; a line break follows only when standard output \
                is a terminal, so 'vault generate | vault add NAME' stores the secret without one. To \
                store a generated secret without it passing through a pipe, use 'vault add NAME --generate'.
                """
        )

        @OptionGroup var recipe: SecretRecipeOptions

        func run(_ context: CommandContext) async throws {
            let secret = try SecretGenerator.generate(try recipe.recipe())
            try StandardIO.printOutput(secret)
            if StandardIO.isTerminal(StandardIO.output) { try StandardIO.printOutput("\n") }
        }
    }
}
