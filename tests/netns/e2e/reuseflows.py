#!/usr/bin/env python3
"""Sequential short flows for e2e_reuse.sh, each hash-checked both ways.

flows: <n> flows one after another, each an EOFSEND to the target of
tools.py: the request (<bytes>), then shutdown(SHUT_WR); the target
answers only after it read EOF (so the app's FIN crossed the tunnel as a
FIN), with the request's length and SHA-256 and then <bytes> of its own
stream, whose SHA-256 is checked.  Exit 0 when all matched.

burst: <n> such flows open at once (all started, then all read), so
that as many outer connections end together.

reset: a download (SEND of 64 MiB) that the app resets (SO_LINGER 0)
after its first bytes; exit 0 once the reset is done.
"""
import argparse
import os
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import tools  # noqa: E402


def start(host, port, seed, n, timeout):
    """Opens a flow and sends its request and FIN; (socket, the line the
    target must answer)."""
    c = socket.create_connection((host, port), timeout=timeout)
    c.sendall(("EOFSEND %d %d\n" % (n, seed + 1)).encode())
    sent, digest = tools.send_stream(c, seed, n)
    c.shutdown(socket.SHUT_WR)
    return c, "%d %s" % (sent, digest)


def finish(c, seed, n, want):
    """Reads a started flow's reply to the end; None, or what is wrong."""
    data = b""
    while True:
        b = c.recv(65536)
        if not b:
            break
        data += b
    c.close()
    line, _, rest = data.partition(b"\n")
    if line.decode(errors="replace") != want:
        return "target saw %r, app sent %r" % (line, want)
    if len(rest) != n or tools.hashlib.sha256(rest).hexdigest() != \
            tools.stream_hash(seed + 1, n):
        return "reply of %d bytes does not match" % len(rest)
    return None


def one(host, port, seed, n, timeout):
    c, want = start(host, port, seed, n, timeout)
    return finish(c, seed, n, want)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=("flows", "burst", "reset"))
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--flows", type=int, default=200)
    p.add_argument("--bytes", type=int, default=1024)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=10)
    a = p.parse_args()
    t0 = time.monotonic()
    if a.cmd == "reset":
        c = socket.create_connection((a.host, a.port), timeout=a.timeout)
        c.sendall(b"SEND %d %d 0\n" % (64 << 20, a.seed))
        got = c.recv(65536)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                     struct.pack("ii", 1, 0))
        c.close()
        print("reset: got %d bytes, then reset" % len(got), flush=True)
        return 0 if got else 1
    if a.cmd == "burst":
        try:
            started = [start(a.host, a.port, a.seed + 2 * i, a.bytes,
                             a.timeout) for i in range(a.flows)]
            errs = [finish(c, a.seed + 2 * i, a.bytes, want)
                    for i, (c, want) in enumerate(started)]
        except OSError as e:
            errs = ["%s" % e]
        errs = [e for e in errs if e]
        if errs:
            print("burst: %d failed: %s" % (len(errs), errs[0]), flush=True)
            return 1
        print("burst: %d flows open at once, sha256 match both ways" %
              a.flows, flush=True)
        return 0
    for i in range(a.flows):
        try:
            err = one(a.host, a.port, a.seed + 2 * i, a.bytes, a.timeout)
        except OSError as e:
            err = "%s" % e
        if err:
            print("flow %d of %d: %s" % (i + 1, a.flows, err), flush=True)
            return 1
    dt = time.monotonic() - t0
    print("flows: %d sequential flows of %d bytes each way, FIN before "
          "every reply, sha256 match, %.2fs (%.0f/s)" %
          (a.flows, a.bytes, dt, a.flows / dt), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
