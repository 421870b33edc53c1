#!/usr/bin/python3
"""Where a Secret Service lookup's time goes: the provider's answer to each D-Bus call that
`secret-tool lookup` makes, timed one by one from one client connection (jeepney, Debian's
python3-jeepney / python3-secretstorage), on the bus in $DBUS_SESSION_BUS_ADDRESS.

    secret-service-calls.py LABEL ITERATIONS ATTRIBUTE=VALUE...

Prints one markdown row per call: LABEL, the call, its median and p99 in ms over ITERATIONS.
The calls are those libsecret makes for a lookup (dbus-monitor --profile of secret-tool lookup):
a new bus connection (Hello), Properties.GetAll on the service, OpenSession with the DH algorithm
libsecret tries first, SearchItems, GetSecrets; then the same calls again on that connection,
OpenSession plain and Session.Close.
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
    properties = DBusAddress(SERVICE.object_path, bus_name=SERVICE.bus_name, interface="org.freedesktop.DBus.Properties")
    for _ in range(iterations):
        # As secret-tool lookup: a new connection, the service's properties, a DH session, the
        # search, the secret. The provider learns who the caller is on its first call.
        connection = timed(samples, "1. new bus connection (auth + Hello)", lambda: open_dbus_connection(bus="SESSION"))
        timed(samples, "2. Properties.GetAll (service; the connection's first call)",
              lambda: call(connection, properties, "GetAll", "s", "org.freedesktop.Secret.Service"))
        dh = Session()
        _, path = timed(samples, f"3. OpenSession {DH}", lambda: call(
            connection, SERVICE, "OpenSession", "sv", DH, ("ay", int_to_bytes(dh.my_public_key))))
        unlocked, locked = timed(samples, "4. SearchItems", lambda: call(connection, SERVICE, "SearchItems", "a{ss}", attributes))
        if not unlocked:
            raise RuntimeError(f"SearchItems found nothing unlocked (locked: {locked})")
        timed(samples, "5. GetSecrets (DH session)", lambda: call(connection, SERVICE, "GetSecrets", "aoo", unlocked[:1], path))
        # The same again on the connection the provider knows now.
        timed(samples, "6. SearchItems again, same connection", lambda: call(connection, SERVICE, "SearchItems", "a{ss}", attributes))
        timed(samples, "7. GetSecrets again, same connection", lambda: call(connection, SERVICE, "GetSecrets", "aoo", unlocked[:1], path))
        _, plain = timed(samples, "8. OpenSession plain", lambda: call(connection, SERVICE, "OpenSession", "sv", "plain", ("s", "")))
        for session_path in (path, plain):
            session = DBusAddress(session_path, bus_name="org.freedesktop.secrets", interface="org.freedesktop.Secret.Session")
            timed(samples, "9. Session.Close", lambda: call(connection, session, "Close", ""))
        connection.close()
    for name, values in samples.items():
        values.sort()
        p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
        print(f"| {label} | {name} | {statistics.median(values):.3f} | {p99:.3f} |")


if __name__ == "__main__":
    main()
