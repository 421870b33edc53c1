#!/usr/bin/env python3
"""Independent reader of vault format v1, written from docs/FORMAT.md alone.

Usage: decrypt-vault.py VAULT_FILE (--key-file FILE | --passphrase-file FILE)
Prints the entries as JSON (secrets base64-encoded). Used by the test suite to
prove that the format document is complete; not part of the product.
"""
import argparse, base64, hashlib, hmac, json, struct, sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

MAGIC = bytes([0x89, 0x56, 0x41, 0x55, 0x4C, 0x54, 0x0D, 0x0A])
KINDS = {1: "accessToken", 2: "refreshToken", 3: "idToken", 4: "password", 5: "generic"}


def hkdf(ikm, salt, info):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(ikm)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("vault")
    parser.add_argument("--key-file")
    parser.add_argument("--passphrase-file")
    args = parser.parse_args()
    data = open(args.vault, "rb").read()

    if data[:8] != MAGIC: sys.exit("bad magic")
    if data[8] != 1: sys.exit("unsupported version")
    if hashlib.sha256(data[:182]).digest()[:8] != data[182:190]: sys.exit("bad checksum")
    flags, = struct.unpack(">H", data[10:12])
    if flags != 0: sys.exit("unknown flags")
    vault_id = data[12:28]
    kind, log_n = data[28], data[29]
    r, p = struct.unpack(">II", data[30:38])
    salt = data[38:70]
    wrap_nonce, wrapped, wrap_tag = data[70:82], data[82:114], data[114:130]
    generation, index_len, values_len = struct.unpack(">QIQ", data[130:150])
    mac = data[150:182]
    if len(data) != 218 + index_len + values_len: sys.exit("length mismatch")

    if kind == 1:
        passphrase = open(args.passphrase_file, "rb").read().rstrip(b"\n")
        kek = Scrypt(salt=salt, length=32, n=1 << log_n, r=r, p=p).derive(passphrase)
    elif kind == 2:
        key = open(args.key_file, "rb").read()
        kek = hkdf(key, salt, b"vault/v1/kek/key-material")
    else:
        sys.exit("unknown slot kind")
    dek = AESGCM(kek).decrypt(wrap_nonce, wrapped + wrap_tag, data[:70])
    k_mac = hkdf(dek, vault_id, b"vault/v1/header-mac")
    k_index = hkdf(dek, vault_id, b"vault/v1/index")
    k_value = hkdf(dek, vault_id, b"vault/v1/value")
    if not hmac.compare_digest(hmac.new(k_mac, data[:150], hashlib.sha256).digest(), mac): sys.exit("header MAC")

    index = AESGCM(k_index).decrypt(data[190:202], data[202:218 + index_len], data[:190])
    values = data[218 + index_len:]
    if index[:16] != vault_id or struct.unpack(">Q", index[16:24])[0] != generation: sys.exit("index binding")
    count, = struct.unpack(">I", index[24:28])
    pos = 28
    entries = []

    def take(n):
        nonlocal pos
        chunk = index[pos:pos + n]
        pos += n
        return chunk

    for _ in range(count):
        owner = take(struct.unpack(">H", take(2))[0]).decode()
        name = take(struct.unpack(">H", take(2))[0]).decode()
        kind_code = take(1)[0]
        eflags = take(1)[0]
        label = take(struct.unpack(">H", take(2))[0]).decode() if eflags & 1 else None
        created, updated = struct.unpack(">qq", take(16))
        expires = struct.unpack(">q", take(8))[0] if eflags & 2 else None
        offset, length = struct.unpack(">QI", take(12))
        nonce, tag = take(12), take(16)
        aad = (b"vault/v1/value" + vault_id + struct.pack(">H", len(owner.encode())) + owner.encode()
               + struct.pack(">H", len(name.encode())) + name.encode())
        secret = AESGCM(k_value).decrypt(nonce, values[offset:offset + length] + tag, aad)
        entries.append({
            "owner": owner, "name": name, "kind": KINDS[kind_code], "label": label,
            "createdMs": created, "updatedMs": updated, "expiresMs": expires,
            "transferable": bool(eflags & 4), "secretBase64": base64.b64encode(secret).decode(),
        })
    if any(index[pos:]): sys.exit("non-zero padding")
    json.dump({"vaultId": vault_id.hex(), "generation": generation, "entries": entries}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
