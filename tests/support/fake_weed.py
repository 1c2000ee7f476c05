"""A stand-in for the ``weed`` binary, for the launcher's own tests (``tests/unit/aws/test_seaweedfs_launcher.py``).

``weed version`` prints a version line; ``weed ... mini -flag=value ...``
listens on every ``-*.port*`` it is given and prints weed mini's banner,
shaped by ``$FAKE_WEED_MODE``:

- ``ok``: as weed does;
- ``wrong-s3``: the banner names another S3 port than the one asked for;
- ``not-listening``: the banner is right, but the volume server's gRPC port is never opened;
- ``port-taken``: weed's line for a port it cannot use, then exit 1;
- ``ignore-term``: as ``ok``, and SIGTERM is ignored (as a ``weed server`` once did).

Like weed, it also listens on a unix socket per gRPC port at the path weed hard-codes,
``/tmp/seaweedfs-<server>-grpc-<port>.sock``, and removes them on SIGTERM: killed, it leaves them.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time


def main(argv: list[str]) -> int:
    if "version" in argv:
        print("version 8000GB 4.48 fake linux amd64")
        return 0
    mode = os.environ.get("FAKE_WEED_MODE", "ok")
    flags = dict(a[1:].split("=", 1) for a in argv if a.startswith("-") and "=" in a)
    if mode == "port-taken":
        print(f"E1201 mini.go:1244 Port allocation failed: port {flags['s3.port']} for S3 (specified by flag "
              "s3.port) is not available on 127.0.0.1 and cannot be used", flush=True)
        return 1
    host = flags["ip.bind"]
    held = []
    local = [f"/tmp/seaweedfs-{flag.split('.')[0]}-grpc-{value}.sock" for flag, value in flags.items()
             if flag.endswith(".port.grpc")]
    for path in local:
        u = socket.socket(socket.AF_UNIX)
        u.bind(path)
        u.listen()
        held.append(u)

    def removed(*_: object) -> None:
        for path in local:
            os.unlink(path)
        os._exit(0)

    signal.signal(signal.SIGTERM, signal.SIG_IGN if mode == "ignore-term" else removed)
    for flag, value in flags.items():
        if ".port" in flag and value != "0" and not (mode == "not-listening" and flag == "volume.port.grpc"):
            s = socket.socket()
            s.bind((host, int(value)))
            s.listen()
            held.append(s)
    s3 = int(flags["s3.port"]) + (1 if mode == "wrong-s3" else 0)
    print("  All enabled components are running and ready to use:\n", flush=True)
    for label, port in (("Master UI", flags["master.port"]), ("Volume Server", flags["volume.port"]),
                        ("Filer UI", flags["filer.port"]), ("S3 Endpoint", s3)):
        print(f"    {label + ':':<17}http://{host}:{port}", flush=True)
    while True:
        time.sleep(1)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
