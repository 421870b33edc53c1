# Generates Tests/VaultCryptoTests/Fixtures/secret-service-dh-ietf1024.json once, with Python's
# `cryptography` (OpenSSL-backed, but through its own DH and HKDF code) as the reference.
import json, secrets, sys
from cryptography.hazmat.primitives.asymmetric import dh
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives import hashes

P = int(
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD1"
    "29024E088A67CC74020BBEA63B139B22514A08798E3404DD"
    "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245"
    "E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381"
    "FFFFFFFFFFFFFFFF", 16)
Q = (P - 1) // 2
numbers = dh.DHParameterNumbers(P, 2)
params = numbers.parameters()

def be(n, length=None):
    length = length or (n.bit_length() + 7) // 8
    return n.to_bytes(length, "big")

def hkdf(ikm):
    return HKDF(algorithm=hashes.SHA256(), length=16, salt=None, info=None).derive(ikm)

def case(name, x, peer_bytes, note):
    priv = dh.DHPrivateNumbers(x, dh.DHPublicNumbers(pow(2, x, P), numbers)).private_key()
    peer_y = int.from_bytes(peer_bytes, "big")
    peer = dh.DHPublicNumbers(peer_y, numbers).public_key()
    shared = priv.exchange(peer)
    assert shared == be(pow(peer_y, x, P), 128), "cryptography pads to the prime's length"
    return {
        "name": name, "note": note,
        "privateKey": be(x).hex(),
        "publicKey": be(pow(2, x, P)).hex(),
        "peerPublicKey": peer_bytes.hex(),
        "sessionKey": hkdf(shared).hex(),
        "sessionKeyFromUnpaddedSecret": hkdf(be(pow(peer_y, x, P))).hex(),
    }

def rand_x(): return 1 + secrets.randbelow(Q - 1)

cases = []
x = rand_x(); y = pow(2, rand_x(), P)
while pow(y, x, P).bit_length() <= 1016: y = pow(2, rand_x(), P)
cases.append(case("ordinary", x, be(y), "shared secret 128 bytes long without padding"))
x = rand_x()
while True:
    y = pow(2, rand_x(), P)
    if pow(y, x, P).bit_length() <= 1016: break
cases.append(case("sharedSecretWithLeadingZero", x, be(y),
                  "shared secret below 2^1016: HKDF takes it padded to 128 bytes (libsecret, gnome-keyring)"))
while True:
    x = rand_x()
    if pow(2, x, P).bit_length() <= 1016: break
y = pow(2, rand_x(), P)
cases.append(case("ownPublicKeyWithLeadingZero", x, be(y), "publicKey is sent without its leading zero byte (127 bytes or fewer)"))
x = rand_x()
while True:
    y = pow(2, rand_x(), P)
    if y.bit_length() == 1024: break
cases.append(case("peerKeyWithLeadingZeroByte", x, b"\x00" + be(y),
                  "peer value with a leading zero byte (129 bytes, as GnuTLS exports it): accepted"))
json.dump({"source": "generated once with Python cryptography " + __import__("cryptography").__version__ +
           " (DH exchange, HKDF-SHA256 no salt no info, 16 bytes); never regenerated",
           "group": "RFC 2409 section 6.2 (second Oakley group), generator 2",
           "cases": cases}, sys.stdout, indent=2)
print()
