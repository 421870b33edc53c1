"""Python `keyring` with the keyrings.cryptfile backend, driven the way an application would.

    keyring-cryptfile.py get SERVICE NAME          print the secret (no newline added)
    keyring-cryptfile.py set SERVICE NAME          store standard input
    keyring-cryptfile.py populate SERVICE COUNT    entry-00001 … with 1 KiB secrets (one process)

The `keyring` command cannot be used: CryptFileKeyring overrides `__init__` without calling
the base class, so `KEYRING_PROPERTY_KEYRING_KEY` is ignored and it asks on the terminal.
The password comes from VAULT_BENCH_KEYRING_PASSWORD; the file lives in
$XDG_DATA_HOME/python_keyring/cryptfile_pass.cfg. The KDF is the backend's default:
Argon2id, time_cost 15, memory_cost 64 MiB, parallelism 2, run once to check the password
and once per secret (every secret has its own salt).
"""
import os
import sys

from keyrings.cryptfile.cryptfile import CryptFileKeyring


def open_keyring():
    keyring = CryptFileKeyring()
    keyring.keyring_key = os.environ["VAULT_BENCH_KEYRING_PASSWORD"]  # creates or unlocks the file
    return keyring


def populate(keyring, service, count):
    """Adds entry-00001 … entry-COUNT with 1 KiB secrets, in the format set_password writes.

    set_password would run Argon2 once per entry (its own salt) and rewrite the whole file
    each time: hours for 10,000 entries. This derives one key with the backend's parameters
    and a salt shared by these entries, seals each with AES-GCM exactly as the backend's
    encrypt() does, and writes the file once. get_password reads them like any other entry
    (it runs Argon2 with the entry's salt, as always).
    """
    import base64
    import configparser
    import json
    from argon2.low_level import Type, hash_secret_raw
    from Crypto.Cipher import AES
    from keyrings.cryptfile.escape import escape

    salt = os.urandom(16)
    key = hash_secret_raw(secret=keyring.keyring_key.encode(keyring.password_encoding), salt=salt,
                          time_cost=keyring.time_cost, memory_cost=keyring.memory_cost,
                          parallelism=keyring.parallelism, hash_len=16, type=Type.ID)
    config = configparser.RawConfigParser()
    config.read(keyring.file_path)
    keyring._check_version(config)
    if not config.has_section(escape(service)):
        config.add_section(escape(service))
    for number in range(1, count + 1):
        name = "entry-%05d" % number
        secret = base64.b64encode(os.urandom(768)).decode()
        cipher = AES.new(key, AES.MODE_GCM)
        cipher.update(keyring._generate_assoc(service, name))
        data, mac = cipher.encrypt_and_digest(secret.encode("utf-8"))
        fields = {field: base64.encodebytes(value).decode()[:-1]
                  for field, value in dict(salt=salt, data=data, mac=mac, nonce=cipher.nonce).items()}
        config.set(escape(service), escape(name), "\n" + base64.encodebytes(json.dumps(fields).encode()).decode())
    with open(keyring.file_path, "w") as file:
        config.write(file)


def main(argv):
    command = argv[1] if len(argv) > 1 else ""
    if command == "get" and len(argv) == 4:
        secret = open_keyring().get_password(argv[2], argv[3])
        if secret is None:
            print("keyring-cryptfile: not found", file=sys.stderr)
            return 1
        sys.stdout.write(secret)
    elif command == "set" and len(argv) == 4:
        open_keyring().set_password(argv[2], argv[3], sys.stdin.read())
    elif command == "populate" and len(argv) == 4:
        populate(open_keyring(), argv[2], int(argv[3]))
    else:
        print(__doc__, file=sys.stderr)
        return 64
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
