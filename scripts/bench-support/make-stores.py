"""Set-up data for scripts/bench: the peers' stores, filled the fast way.

    make-stores.py pass-plaintexts DIR COUNT   DIR/entry-00001 … (1 KiB secrets) for gpg --multifile --encrypt
    make-stores.py keepass-xml FILE COUNT      a KeePass 2 XML file for keepassxc-cli import

Secrets are 1 KiB of base64 text from random bytes, like the ones vault's VaultBench writes.
"""
import base64
import os
import sys
import uuid
from xml.sax.saxutils import escape


def secret():
    return base64.b64encode(os.urandom(768)).decode()


def pass_plaintexts(directory, count):
    for number in range(1, count + 1):
        with open(os.path.join(directory, "entry-%05d" % number), "w") as file:
            file.write(secret())


def keepass_xml(path, count):
    def new_uuid():
        return base64.b64encode(uuid.uuid4().bytes).decode()

    with open(path, "w") as file:
        file.write('<?xml version="1.0" encoding="utf-8" standalone="yes"?>\n<KeePassFile><Meta>'
                   "<Generator>vault-bench</Generator><DatabaseName>bench</DatabaseName></Meta>"
                   "<Root><Group><UUID>%s</UUID><Name>Root</Name>\n" % new_uuid())
        for number in range(1, count + 1):
            file.write("<Entry><UUID>%s</UUID><String><Key>Title</Key><Value>entry-%05d</Value></String>"
                       '<String><Key>Password</Key><Value ProtectInMemory="True">%s</Value></String></Entry>\n'
                       % (new_uuid(), number, escape(secret())))
        file.write("</Group></Root></KeePassFile>\n")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("pass-plaintexts", "keepass-xml"):
        sys.exit(__doc__)
    {"pass-plaintexts": pass_plaintexts, "keepass-xml": keepass_xml}[sys.argv[1]](sys.argv[2], int(sys.argv[3]))
