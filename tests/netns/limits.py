#!/usr/bin/env python3
"""Apps for the resource limit tests (fault_limits.sh, fault_loris.sh,
fault_user_limits.sh, fault_memory.sh).  Standard library only; reuses the
stream and header helpers of tools.py and soak.py.

  native     N sessions straight to the server in the native protocol as
             one user (TLS, request header, status byte), each proven with
             a round trip through soak.py's ECHO target; counts the statuses
             (0 ok, 9 limit), holds them until --release, proves them again.
             With --trojan, trojan CONNECT requests instead (no status: a
             close counts as limit).
  tlsprobe   one TLS handshake with the server from --source: exit 0 when
             it completes, 1 when the server resets or closes it.
  slowrecv   N downloads through the tunnel, all connected first, then
             started together; each read at --rate bytes/s, every byte
             checked against its stream.

Each prints one summary line and exits 0 when everything behaved, 1 when
not.
"""

import argparse
import base64
import hashlib
import json
import os
import socket
import ssl
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from soak import native_header  # noqa: E402
from tools import StreamCheck, errname, parse_size, tls_exporter  # noqa: E402

KIND = {"tcp": 1, "udp": 2}


def log(*a):
    print(*a, flush=True)


def tls_connect(args, timeout):
    ctx = ssl.create_default_context(cafile=args.ca)
    raw = socket.create_connection(
        (args.server, args.port), timeout=timeout,
        source_address=(args.source, 0) if args.source else None)
    try:
        return ctx.wrap_socket(raw, server_hostname=args.sni)
    except Exception:
        raw.close()
        raise


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise ConnectionError("EOF after %d of %d bytes" % (len(b), n))
        b += c
    return b


def echo_round(s, tag):
    s.sendall(tag + b"\n")
    want = tag + b"\n"
    got = recv_exact(s, len(want))
    if got != want:
        raise ValueError("echo %r, want %r" % (got, want))


def trojan_request(password, target, port):
    """A trojan CONNECT request: hex(SHA-224(password)) CRLF, CMD ATYP
    address port CRLF (IPv4 only here)."""
    h = hashlib.sha224(password.encode()).hexdigest().encode()
    return h + b"\r\n" + bytes([1, 1]) + socket.inet_aton(target) + \
        struct.pack("!H", port) + b"\r\n"


def cmd_native(args):
    key = base64.b64decode(args.key) if args.key else None
    counts, held = {}, []
    for i in range(args.conns):
        s = None
        try:
            s = tls_connect(args, args.timeout)
            s.settimeout(args.timeout)
            if args.trojan is not None:
                # No status byte: refused is closed; served is relayed.
                s.sendall(trojan_request(args.trojan, args.target,
                                         args.tport))
                st = 0
            else:
                s.sendall(native_header(key, KIND[args.kind], args.target,
                                        args.tport, bind=tls_exporter(s)))
                st = recv_exact(s, 1)[0]
            what = {0: "ok", 9: "limit"}.get(st, "status%d" % st)
            if st == 0 and args.kind == "tcp":
                s.sendall(b"ECHO\n")
                if recv_exact(s, 3) != b"OK\n":
                    raise ValueError("no OK from the echo target")
                echo_round(s, b"first %d" % i)
            if st == 0:
                held.append(s)
            else:
                s.close()
        except Exception as e:  # noqa: BLE001 -- counted and reported
            what = "error " + (errname(e) if isinstance(e, OSError)
                               else type(e).__name__)
            if args.trojan is not None and isinstance(e, ConnectionError):
                what = "limit"	# trojan's only answer: the close
            if s is not None and s not in held:
                s.close()
        counts[what] = counts.get(what, 0) + 1
    log("native %s x%d as %s: %s" % (args.kind, args.conns, args.name,
                                     json.dumps(counts, sort_keys=True)))
    if args.ready:
        with open(args.ready, "w") as f:
            f.write(json.dumps(counts, sort_keys=True) + "\n")
    end = time.monotonic() + args.hold
    while time.monotonic() < end:
        if args.release and os.path.exists(args.release):
            break
        time.sleep(0.1)
    bad = 0
    for i, s in enumerate(held):
        try:
            if args.kind == "tcp":
                echo_round(s, b"again %d" % i)
        except Exception:  # noqa: BLE001
            bad += 1
        s.close()
    log("native %s as %s: %d held, %d broke while held" %
        (args.kind, args.name, len(held), bad))
    ok = counts.get("ok", 0)
    want_ok = args.want_ok if args.want_ok is not None else args.conns
    want_limit = args.want_limit or 0
    return 0 if (ok == want_ok and counts.get("limit", 0) == want_limit and
                 bad == 0) else 1


def cmd_tlsprobe(args):
    t0 = time.monotonic()
    try:
        s = tls_connect(args, args.timeout)
        s.close()
    except Exception as e:  # noqa: BLE001
        log("tlsprobe from %s: failed after %.3fs: %s" %
            (args.source, time.monotonic() - t0,
             errname(e) if isinstance(e, OSError) else e))
        return 1
    log("tlsprobe from %s: handshake done in %.3fs" %
        (args.source, time.monotonic() - t0))
    return 0


def cmd_slowrecv(args):
    n, size, rate = args.conns, parse_size(args.bytes), parse_size(args.rate)
    results = [None] * n
    started = [0] * n
    barrier = threading.Barrier(n)

    def worker(i):
        seed = args.seed + i
        chk = StreamCheck(seed, size)
        t0 = time.monotonic()
        try:
            # One at a time: each is admitted before the next arrives.
            time.sleep(i * args.stagger)
            c = socket.create_connection((args.host, args.port),
                                         timeout=args.timeout)
            c.settimeout(args.timeout)
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            # Every connection is open (and admitted) before any data
            # moves: then they all want buffers at once.
            barrier.wait(timeout=args.timeout)
            time.sleep(args.start_delay)
            t0 = time.monotonic()
            c.sendall(("SEND %d %d 0\n" % (size, seed)).encode())
            while True:
                b = c.recv(4096)
                if not b:
                    break
                chk.feed(b)
                started[i] = chk.got
                # Read at the given rate: sleep until this much is due
                # (one clock reading: two could straddle the due time).
                wait = t0 + chk.got / rate - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
            c.close()
        except OSError as e:
            results[i] = "conn %d: %s after %d bytes" % (i, errname(e),
                                                         chk.got)
            barrier.abort()
            return
        except threading.BrokenBarrierError:
            results[i] = "conn %d: another connection failed" % i
            return
        if chk.bad_at is not None:
            results[i] = "conn %d: MISMATCH at %d" % (i, chk.bad_at)
        elif chk.got != size:
            results[i] = "conn %d: SHORT %d of %d" % (i, chk.got, size)
        else:
            results[i] = "ok"

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    if args.ready:
        while (min(started) < 65536 and any(t.is_alive() for t in threads)
               and time.monotonic() - t0 < args.timeout):
            time.sleep(0.1)
        with open(args.ready, "w") as f:
            f.write("%d\n" % sum(1 for x in started if x >= 65536))
    for t in threads:
        t.join()
    bad = [r for r in results if r != "ok"]
    for r in bad[:10]:
        log("slowrecv: FAILED %s" % r)
    log("slowrecv: %d/%d downloads of %d bytes intact at %d B/s each, %.1fs"
        % (n - len(bad), n, size, rate, time.monotonic() - t0))
    return 0 if not bad else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def tls(a):
        a.add_argument("--server", required=True)
        a.add_argument("--port", type=int, required=True)
        a.add_argument("--ca", required=True)
        a.add_argument("--sni", required=True)
        a.add_argument("--source")
        a.add_argument("--timeout", type=float, default=10)

    a = sub.add_parser("native")
    tls(a)
    g = a.add_mutually_exclusive_group(required=True)
    g.add_argument("--key", help="native protocol, this user key")
    g.add_argument("--trojan", metavar="PASSWORD", help="trojan CONNECT")
    a.add_argument("--name", default="user")
    a.add_argument("--kind", choices=sorted(KIND), default="tcp")
    a.add_argument("--target", required=True)
    a.add_argument("--tport", type=int, required=True)
    a.add_argument("--conns", type=int, required=True)
    a.add_argument("--hold", type=float, default=0)
    a.add_argument("--ready")
    a.add_argument("--release")
    a.add_argument("--want-ok", type=int)
    a.add_argument("--want-limit", type=int)
    a = sub.add_parser("tlsprobe")
    tls(a)
    a = sub.add_parser("slowrecv")
    a.add_argument("--host", required=True)
    a.add_argument("--port", type=int, required=True)
    a.add_argument("--conns", type=int, required=True)
    a.add_argument("--bytes", required=True)
    a.add_argument("--rate", required=True)
    a.add_argument("--seed", type=int, default=100)
    a.add_argument("--start-delay", type=float, default=0.5)
    a.add_argument("--stagger", type=float, default=0.05)
    a.add_argument("--timeout", type=float, default=60)
    a.add_argument("--ready")
    args = p.parse_args()
    return {"native": cmd_native, "tlsprobe": cmd_tlsprobe,
            "slowrecv": cmd_slowrecv}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
