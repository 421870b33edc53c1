#!/usr/bin/python3
"""Where a Secret Service lookup's time goes: the provider's answer to each D-Bus call that
`secret-tool lookup` makes, timed one by one from one client connection (jeepney, Debian's
python3-jeepney / python3-secretstorage), on the bus in $DBUS_SESSION_BUS_ADDRESS.

    secret-service-calls.py LABEL ITERATIONS ATTRIBUTE=VALUE...

Prints one markdown row per call: LABEL, the call, its median and p99 in ms over ITERATIONS.
The calls are those libsecret makes for a lookup: a new bus connection (Hello), OpenSession with
the DH algorithm libsecret tries first (and with plain), SearchItems, GetSecrets, CloseSession.
"""
import statistics
import sys
import time

from jeepney import DBusAddress, new_method_call
from jeepney.io.blocking import open_dbus_connection
from secretstorage.dhcrypto import Session, int_to_bytes

SERVICE = DBusAddress("/org/freedesktop/secrets", bus_name="org.freedesktop.secrets",
                      interface="org.freedesktop.Secret.Service")
DH = "dh-ietf1024-sha256-aes128-cbc-pkcs7"


def call(connection, address, method, signature, *body, interface=None):
    if interface is not None:
        address = DBusAddress(address.object_path, bus_name=address.bus_name, interface=interface)
    reply = connection.send_and_get_reply(new_method_call(address, method, signature, body), timeout=10)
    if reply.header.message_type.name == "error":
        raise RuntimeError(f"{method}: {reply.header.fields} {reply.body}")
    return reply.body


def timed(samples, name, function):
    start = time.perf_counter()
    result = function()
    samples.setdefault(name, []).append((time.perf_counter() - start) * 1000)
    return result


def main():
    label, iterations = sys.argv[1], int(sys.argv[2])
    attributes = dict(argument.split("=", 1) for argument in sys.argv[3:])
    samples = {}
    connection = open_dbus_connection(bus="SESSION")
    for _ in range(iterations):
        fresh = timed(samples, "new bus connection (auth + Hello)", lambda: open_dbus_connection(bus="SESSION"))
        fresh.close()
        dh = Session()
        output, path = timed(samples, f"OpenSession {DH}", lambda: call(
            connection, SERVICE, "OpenSession", "sv", DH, ("ay", int_to_bytes(dh.my_public_key))))
        _, plain_path = timed(samples, "OpenSession plain", lambda: call(connection, SERVICE, "OpenSession", "sv", "plain", ("s", "")))
        unlocked, locked = timed(samples, "SearchItems", lambda: call(connection, SERVICE, "SearchItems", "a{ss}", attributes))
        if not unlocked:
            raise RuntimeError(f"SearchItems found nothing unlocked (locked: {locked})")
        timed(samples, "GetSecrets (DH session)", lambda: call(connection, SERVICE, "GetSecrets", "aoo", unlocked[:1], path))
        for session_path in (path, plain_path):
            session = DBusAddress(session_path, bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Session")
            timed(samples, "Session.Close", lambda: call(connection, session, "Close", ""))
    connection.close()
    for name, values in samples.items():
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"| {label} | {name} | {statistics.median(values):.3f} | {p99:.3f} |")


if __name__ == "__main__":
    main()
