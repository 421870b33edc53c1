#!/usr/bin/env python3
"""Independent reader of vault formats v1, v2 and v3, written from docs/FORMAT.md alone.

Usage: decrypt-vault.py VAULT_FILE (--key-file FILE | --passphrase-file FILE)
Prints the entries as JSON (secrets base64-encoded). Used by the test suite to
prove that the format document is complete; not part of the product.
"""
import argparse, base64, hashlib, hmac, json, struct, sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

MAGIC = bytes([0x89, 0x56, 0x41, 0x55, 0x4C, 0x54, 0x0D, 0x0A])
KINDS = {1: "accessToken", 2: "refreshToken", 3: "idToken", 4: "password", 5: "generic", 6: "totp"}


def hkdf(ikm, salt, info):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(ikm)


def parse_entries(index, pos, count, values, k_value, vault_id, check_padding=True):
    """Entries (the same layout in v1 and v2) from index[pos:], values at offsets in `values`."""
    entries = []

    def take(n):
        nonlocal pos
        chunk = index[pos:pos + n]
        if len(chunk) != n: sys.exit("index ends early")
        pos += n
        return chunk

    expected_offset = 0
    previous = None
    for _ in range(count):
        owner_b = take(struct.unpack(">H", take(2))[0])
        name_b = take(struct.unpack(">H", take(2))[0])
        if previous is not None and not previous < (owner_b, name_b): sys.exit("entries out of order")
        previous = (owner_b, name_b)
        owner, name = owner_b.decode(), name_b.decode()
        kind_code = take(1)[0]
        eflags = take(1)[0]
        if eflags & ~15: sys.exit("unknown entry flags")
        label = take(struct.unpack(">H", take(2))[0]).decode() if eflags & 1 else None
        created, updated = struct.unpack(">qq", take(16))
        expires = struct.unpack(">q", take(8))[0] if eflags & 2 else None
        attributes = {}
        if eflags & 8:   # has attributes: u8 count (1..64), then (u16 len, name, u16 len, value) by ascending name bytes
            attribute_count = take(1)[0]
            if not 1 <= attribute_count <= 64: sys.exit("attribute count out of range")
            previous_name = None
            for _ in range(attribute_count):
                name_len = struct.unpack(">H", take(2))[0]
                if not 1 <= name_len <= 256: sys.exit("attribute name length out of range")
                attribute_name = take(name_len)
                value_len = struct.unpack(">H", take(2))[0]
                if value_len > 1024: sys.exit("attribute value length out of range")
                attribute_value = take(value_len)
                if b"\0" in attribute_name or b"\0" in attribute_value: sys.exit("attribute holds NUL")
                if previous_name is not None and not previous_name < attribute_name: sys.exit("attributes out of order")
                previous_name = attribute_name
                attributes[attribute_name.decode()] = attribute_value.decode()
        offset, length = struct.unpack(">QI", take(12))
        if offset != expected_offset or offset + length > len(values): sys.exit("bad value offsets")
        expected_offset += length
        nonce, tag = take(12), take(16)
        aad = (b"vault/v1/value" + vault_id + struct.pack(">H", len(owner_b)) + owner_b
               + struct.pack(">H", len(name_b)) + name_b)
        secret = AESGCM(k_value).decrypt(nonce, values[offset:offset + length] + tag, aad)
        entries.append({
            "owner": owner, "name": name, "kind": KINDS[kind_code], "label": label,
            "createdMs": created, "updatedMs": updated, "expiresMs": expires,
            "transferable": bool(eflags & 4), "attributes": attributes,
            "secretBase64": base64.b64encode(secret).decode(),
        })
    if expected_offset != len(values): sys.exit("values not fully claimed")
    if check_padding and any(index[pos:]): sys.exit("non-zero padding")
    return entries, pos


def parse_history(index, pos, vault_id, k_history):
    """The history section (v3, header flag bit 0): earlier values kept inline, sealed under K_history."""
    def take(n):
        nonlocal pos
        chunk = index[pos:pos + n]
        if len(chunk) != n: sys.exit("history ends early")
        pos += n
        return chunk

    def text(cap):
        length = struct.unpack(">H", take(2))[0]
        if length > cap: sys.exit("history text too long")
        return take(length)

    limit, count = struct.unpack(">HI", take(6))
    if limit > 100 or count > 200000: sys.exit("history limit or count out of range")
    records, previous = [], None
    for _ in range(count):
        owner_b, name_b = text(256), text(256)
        if not name_b: sys.exit("history name empty")
        if previous is not None and not previous < (owner_b, name_b): sys.exit("history records out of order")
        previous = (owner_b, name_b)
        last_version, = struct.unpack(">I", take(4))
        last_writer = text(512).decode()
        version_count, = struct.unpack(">H", take(2))
        if last_version < 1 or version_count > limit: sys.exit("history record out of range")
        versions, previous_version = [], 0
        for _ in range(version_count):
            number, kind_code, vflags = struct.unpack(">IBB", take(6))
            if not previous_version < number <= last_version or vflags & ~7: sys.exit("history version out of range")
            previous_version = number
            label = text(1024).decode() if vflags & 1 else None
            written, replaced = struct.unpack(">qq", take(16))
            expires = struct.unpack(">q", take(8))[0] if vflags & 2 else None
            writer = text(512).decode()
            length, = struct.unpack(">I", take(4))
            if length > 1 << 20: sys.exit("history value too long")
            nonce, ciphertext, tag = take(12), take(length), take(16)
            aad = (b"vault/v3/history" + vault_id + struct.pack(">H", len(owner_b)) + owner_b
                   + struct.pack(">H", len(name_b)) + name_b + struct.pack(">I", number))
            value = AESGCM(k_history).decrypt(nonce, ciphertext + tag, aad)
            versions.append({"version": number, "kind": KINDS[kind_code], "label": label, "writtenMs": written,
                             "replacedMs": replaced, "expiresMs": expires, "transferable": bool(vflags & 4),
                             "writer": writer, "secretBase64": base64.b64encode(value).decode()})
        records.append({"owner": owner_b.decode(), "name": name_b.decode(), "lastVersion": last_version,
                        "lastWriter": last_writer, "versions": versions})
    return {"limit": limit, "records": records}, pos


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("vault")
    parser.add_argument("--key-file")
    parser.add_argument("--passphrase-file")
    args = parser.parse_args()
    data = open(args.vault, "rb").read()

    if data[:8] != MAGIC: sys.exit("bad magic")
    major = data[8]
    if major == 1:
        header_len, checksummed, maced = 190, 182, 150
    elif major in (2, 3):
        header_len, checksummed, maced = 182, 174, 142
    else:
        sys.exit("unsupported version")
    if len(data) < header_len: sys.exit("header ends early")
    if hashlib.sha256(data[:checksummed]).digest()[:8] != data[checksummed:header_len]: sys.exit("bad checksum")
    flags, = struct.unpack(">H", data[10:12])
    # Bit 1 (v3): some entry has attributes; bit 2 (v3): some entry is of a kind above 5 (totp).
    # Bit 0 (v3): the index carries a history section after the entries.
    if flags & ~7 or (flags and major != 3): sys.exit("unknown flags")
    vault_id = data[12:28]
    kind, log_n = data[28], data[29]
    r, p = struct.unpack(">II", data[30:38])
    salt = data[38:70]
    wrap_nonce, wrapped, wrap_tag = data[70:82], data[82:114], data[114:130]
    if major == 1:
        generation, index_len, values_len = struct.unpack(">QIQ", data[130:150])
    else:
        index_len, values_len = struct.unpack(">IQ", data[130:142])
    mac = data[maced:maced + 32]
    values_start = header_len + 12 + index_len + 16
    if len(data) != values_start + values_len: sys.exit("length mismatch")
    if major >= 2 and (values_start % 1024 or values_len % 1024): sys.exit("regions not padded")
    if major == 3 and values_len == 0: sys.exit("values region missing")

    if kind == 1:
        passphrase = open(args.passphrase_file, "rb").read()
        if passphrase.endswith(b"\n"): passphrase = passphrase[:-1]
        if passphrase.endswith(b"\r"): passphrase = passphrase[:-1]
        kek = Scrypt(salt=salt, length=32, n=1 << log_n, r=r, p=p).derive(passphrase)
    elif kind == 2:
        key = open(args.key_file, "rb").read()
        kek = hkdf(key, salt, b"vault/v1/kek/key-material")
    else:
        sys.exit("unknown slot kind")
    dek = AESGCM(kek).decrypt(wrap_nonce, wrapped + wrap_tag, data[:70])
    label = b"vault/v%d/" % min(major, 2)   # v3 keeps v2's header-MAC and index keys
    k_mac = hkdf(dek, vault_id, label + b"header-mac")
    k_index = hkdf(dek, vault_id, label + b"index")
    k_value = hkdf(dek, vault_id, b"vault/v1/value")
    if not hmac.compare_digest(hmac.new(k_mac, data[:maced], hashlib.sha256).digest(), mac): sys.exit("header MAC")

    index = AESGCM(k_index).decrypt(data[header_len:header_len + 12], data[header_len + 12:values_start], data[:header_len])
    region = data[values_start:]
    overhead = 0
    if major == 3:
        # The values layer: salt (32) ‖ AES-256-CTR(values ‖ zero padding), initial counter block
        # 16 zero bytes, key HKDF(DEK, vault_id ‖ salt, "vault/v3/values-layer").
        layer_key = hkdf(dek, vault_id + region[:32], b"vault/v3/values-layer")
        decryptor = Cipher(algorithms.AES(layer_key), modes.CTR(bytes(16))).decryptor()
        region = decryptor.update(region[32:]) + decryptor.finalize()
        overhead = 32
    if index[:16] != vault_id: sys.exit("index binding")
    if major == 1:
        if struct.unpack(">Q", index[16:24])[0] != generation: sys.exit("index binding")
        count, = struct.unpack(">I", index[24:28])
        entries, _ = parse_entries(index, 28, count, region, k_value, vault_id)
    else:
        generation, count, exact_values = struct.unpack(">QIQ", index[16:36])
        # index[36:68] is the state key (for the rollback record; not needed to read).
        if -(-(exact_values + overhead) // 1024) * 1024 - overhead != len(region):
            sys.exit("values length does not match the region")
        if any(region[exact_values:]): sys.exit("non-zero values padding")
        entries, end = parse_entries(index, 68, count, region[:exact_values], k_value, vault_id, check_padding=False)
        if flags & 1:
            history, end = parse_history(index, end, vault_id, hkdf(dek, vault_id, b"vault/v3/history"))
        if any(index[end:]): sys.exit("non-zero padding")
        fixed = header_len + 12 + 16
        if len(index) != -(-(fixed + end) // 1024) * 1024 - fixed: sys.exit("index padding not canonical")
    if bool(flags & 2) != any(entry["attributes"] for entry in entries): sys.exit("attribute flag does not match the entries")
    if bool(flags & 4) != any(entry["kind"] == KINDS[6] for entry in entries): sys.exit("newer-kinds flag does not match the entries")
    result = {"format": major, "vaultId": vault_id.hex(), "generation": generation, "entries": entries}
    if flags & 1: result["history"] = history
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
