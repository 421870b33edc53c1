import Foundation
import Testing
@testable import CredentialVault
import VaultCrypto

@Suite struct SessionTransitionTests {
    @Test func signInMigratesGuestItemsAtomically() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        guard case let .guest(anonymousID) = await session.restore() else { Issue.record("not guest"); return }
        try await session.saveItem(NewEntry(name: "cart", secret: secret("3 apples")))
        try await session.saveItem(NewEntry(name: "coins", secret: secret("100"), transferable: false))
        try await session.saveItem(NewEntry(name: "draft", secret: secret("hello")))
        let generationBefore = try fixture.store().generation

        let report = try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        #expect(report.anonymousID == anonymousID)
        #expect(report.userID == "u1")
        #expect(Set(report.moved) == ["cart", "draft"])
        #expect(report.stayed == ["coins"])
        #expect(report.conflicts.isEmpty)
        // Credentials and items landed in one write; the marker removal is the only other one.
        #expect(try fixture.store().generation == generationBefore + 2)

        #expect(Set(try await session.items().map(\.name)) == ["cart", "draft"])
        #expect(try await session.item(named: "cart") == secret("3 apples"))
        #expect(try fixture.store().secret(named: "coins", owner: SessionNamespaces.guest(anonymousID)) == secret("100"))
        #expect(try fixture.store().list(owner: SessionNamespaces.user("u1")).contains { $0.name == "session.migration" } == false)
    }

    @Test(arguments: [MergePolicy.keepAccount, .keepGuest, .newestWins])
    func conflictPolicyDecides(_ policy: MergePolicy) async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        // The account already has "cart" from an earlier sign-in.
        try await session.signIn(user: User(id: "u1", onboardingComplete: true), credentials: fixture.credentials(expiresIn: 3600))
        try await session.saveItem(NewEntry(name: "cart", secret: secret("account cart")))
        try await session.signOut()
        fixture.clock.advance(by: 60)
        try await session.saveItem(NewEntry(name: "cart", secret: secret("guest cart")))
        // Sign-out shredded the account's items, so put the account copy back as an older item.
        try fixture.store().put(NewEntry(name: "cart", owner: SessionNamespaces.user("u1"), secret: secret("account cart")))

        let report = try await session.signIn(user: User(id: "u1", onboardingComplete: true),
                                              credentials: fixture.credentials(expiresIn: 3600), policy: policy)
        let expected: MergeResolution
        switch policy {
        case .keepAccount: expected = .keepAccount
        case .keepGuest: expected = .keepGuest
        default: expected = .keepAccount   // equal timestamps: the account wins the tie
        }
        #expect(report.conflicts == [.init(name: "cart", resolution: expected)])
        let accountCart = try await session.item(named: "cart")
        #expect(accountCart == (expected == .keepGuest ? secret("guest cart") : secret("account cart")))
        if expected == .keepAccount { #expect(report.stayed == ["cart"]) } else { #expect(report.moved == ["cart"]) }
    }

    @Test func failPolicyChangesNothing() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        guard case let .guest(anonymousID) = await session.restore() else { Issue.record("not guest"); return }
        try await session.saveItem(NewEntry(name: "cart", secret: secret("guest cart")))
        try fixture.store().put(NewEntry(name: "cart", owner: SessionNamespaces.user("u1"), secret: secret("account cart")))
        let before = try fixture.store().generation
        await #expect(throws: VaultError.self) {
            try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600), policy: .fail)
        }
        #expect(try fixture.store().generation == before)
        #expect(try fixture.store().secret(named: "cart", owner: SessionNamespaces.guest(anonymousID)) == secret("guest cart"))
        #expect(try fixture.store().secret(named: "cart", owner: SessionNamespaces.user("u1")) == secret("account cart"))
        let profile = try ProfileStore(directory: fixture.directory).load()
        #expect(profile?.pendingSignIn == nil)
        #expect(profile?.user == nil)
    }

    @Test func customPolicyClosureIsConsulted() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        _ = await session.restore()
        try await session.saveItem(NewEntry(name: "a", secret: secret("guest a")))
        try fixture.store().put(NewEntry(name: "a", owner: SessionNamespaces.user("u1"), secret: secret("account a")))
        let report = try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600),
                                              policy: .custom { guest, account in
                                                  guest.metadata.name == account.metadata.name ? .keepGuest : .keepAccount
                                              })
        #expect(report.conflicts == [.init(name: "a", resolution: .keepGuest)])
        #expect(try await session.item(named: "a") == secret("guest a"))
    }

    @Test func signingInAsAnotherUserWhileSignedInIsRefused() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        do {
            try await session.signIn(user: User(id: "u2"), credentials: fixture.credentials(expiresIn: 3600))
            Issue.record("second sign-in succeeded")
        } catch let error as VaultError {
            #expect(error.code == .alreadyExists)
            #expect(error.message.contains("u1"))
        }
    }

    @Test func signOutReturnsToGuestKeepingOrRenewingTheAnonymousID() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        guard case let .guest(first) = await session.restore() else { Issue.record("not guest"); return }
        try await session.signIn(user: User(id: "u1", email: "a@example.com"), credentials: fixture.credentials(expiresIn: 3600))
        try await session.signOut()
        guard case let .guest(second) = await session.restore() else { Issue.record("not guest"); return }
        #expect(second == first)
        #expect(try ProfileStore(directory: fixture.directory).load()?.user == nil)

        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600))
        try await session.signOut(newAnonymousID: true)
        guard case let .guest(third) = await session.restore() else { Issue.record("not guest"); return }
        #expect(third != first)
    }

    @Test func signOutLeavesNothingRecoverableWithTheOldKeyMaterial() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        try await session.signIn(user: User(id: "u1"), credentials: fixture.credentials(expiresIn: 3600, access: "secret-access-token"))
        let path = fixture.directory + "/secrets.vault"
        let before = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        try await session.signOut()
        let after = try Array(Data(contentsOf: URL(fileURLWithPath: path)))

        let key = try fixture.key()
        func decode(_ bytes: [UInt8]) throws -> (VaultImage, DataKeys) {
            let (image, keys, _) = try VaultFileCodec.decode(bytes, path: nil, kekProvider: { slot in
                try KeyHierarchy.deriveKEK(key: key, kind: slot.kind, parameters: slot.scrypt, salt: slot.salt, policy: .testing, path: nil)
            }, dataKeysProvider: { try DataKeys(dek: $0, vaultID: $1) })
            return (image, keys)
        }
        let (oldImage, oldKeys) = try decode(before)
        let (newImage, newKeys) = try decode(after)
        #expect(oldImage.entries.contains { $0.owner == "user:u1" })
        #expect(!newImage.entries.contains { $0.owner == "user:u1" })
        #expect(oldKeys.dek != newKeys.dek, "the data key was rotated")
        // The old data key opens nothing in the new file.
        let header = try VaultFileHeader.parse(after, path: nil)
        let indexBox = try AES256GCM.SealedBox(combined: after[header.layout.headerByteCount..<header.valuesStart])
        #expect(throws: CryptoError.self) {
            try AES256GCM.open(indexBox, using: oldKeys.index(header.layout), authenticating: Array(after[0..<header.layout.headerByteCount]))
        }
        #expect(Data(after).range(of: Data("secret-access-token".utf8)) == nil)
    }

    @Test func enterGuestModeResetsGuestDataAndSettings() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        let session = try fixture.session()
        guard case let .guest(anonymousID) = await session.restore() else { Issue.record("not guest"); return }
        try await session.saveItem(NewEntry(name: "cart", secret: secret("x")))
        try ProfileStore(directory: fixture.directory).update { $0.settings["theme"] = .string("dark") }
        let same = try await session.enterGuestMode()
        #expect(same == anonymousID)
        #expect(try await session.items().isEmpty)
        #expect(try ProfileStore(directory: fixture.directory).load()?.settings.isEmpty == true)
        let renewed = try await session.enterGuestMode(resetAnonymousID: true)
        #expect(renewed != anonymousID)
    }

    @Test func reservedNamesCannotBeSavedAsItems() async throws {
        let fixture = try SessionFixture()
        defer { fixture.cleanUp() }
        await #expect(throws: VaultError.self) {
            try await fixture.session().saveItem(NewEntry(name: "session.access-token", secret: secret("x")))
        }
    }
}
