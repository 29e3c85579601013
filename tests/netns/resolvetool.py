#!/usr/bin/env python3
"""A client of the tunsplit server that names its targets by domain name,
for e2e_resolve.sh: the tunsplit client only forwards addresses from its
TUN, so requests with names come from here.  Standard library only.

  tcp         native header (doc/PROTOCOL.md), kind 1, to --host (a name or
              an address); prints the status byte.  With status 0 it asks
              the target (tools.py serve) for --bytes of stream --seed and
              checks every byte (SHA-256).  --hangup: close right after
              the header instead.
  udp         native header, kind 2, then one frame per --host (repeatable)
              with the payload "WHOAMI" to port --tport; prints the status
              and, per name, the echo server's answer or "no reply".
  trojan      trojan request (CONNECT) with --password to --host; no status
              in trojan: "ok" when the target's bytes arrive intact,
              "closed" when the server closes first.
  trojan-udp  trojan UDP ASSOCIATE, one packet per --host like udp.

--expect makes the exit status 0 only for that outcome (tcp: ok, denied,
resolve, or a status number; udp: a comma-separated list of "echo" or
"none" per --host; trojan: ok or closed).  Exit status: 0 as expected,
1 otherwise, 2 on a local error.
"""

import argparse
import base64
import hashlib
import os
import socket
import ssl
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools import stream_hash, tls_exporter  # noqa: E402

STATUS = {0: "ok", 1: "general", 2: "denied", 3: "net unreachable",
          4: "host unreachable", 5: "refused", 6: "timeout",
          7: "unsupported", 8: "resolve", 9: "limit"}


def log(*a):
    print(*a, flush=True)


def dest(host, port):
    """ATYP | address | port, as the native header, frames and trojan
    share it."""
    for fam, atyp in ((socket.AF_INET, 1), (socket.AF_INET6, 4)):
        try:
            raw = socket.inet_pton(fam, host)
            return struct.pack("!B", atyp) + raw + struct.pack("!H", port)
        except OSError:
            pass
    name = host.encode()
    return struct.pack("!BB", 3, len(name)) + name + struct.pack("!H", port)


def native_header(key, kind, host, port, s):
    """Version 2, bound to the TLS connection s."""
    uid = hashlib.blake2b(b"tunsplit user id", key=key,
                          digest_size=32).digest()[:8]
    body = struct.pack("!BBHQ16s8s", 2, kind, 0, int(time.time()),
                       os.urandom(16), uid) + dest(host, port) + \
        struct.pack("!H", 0)
    body = body[:2] + struct.pack("!H", len(body) + 32) + body[4:]
    return body + hashlib.blake2b(body + tls_exporter(s), key=key,
                                  digest_size=32).digest()


def tls(args):
    ctx = ssl.create_default_context(cafile=args.ca)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    raw = socket.create_connection((args.server, args.port),
                                   timeout=args.timeout)
    return ctx.wrap_socket(raw, server_hostname=args.sni)


def read_all(s, limit=1 << 30):
    h = hashlib.sha256()
    n = 0
    while True:
        try:
            b = s.recv(65536)
        except (ssl.SSLError, OSError) as e:
            if n == 0:
                raise
            log("read: %s after %d bytes" % (e, n))
            break
        if not b:
            break
        h.update(b)
        n += len(b)
        if n > limit:
            break
    return n, h.hexdigest()


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise EOFError("end of stream after %d of %d bytes" % (len(b), n))
        b += c
    return b


def check_stream(s, args, what):
    want = stream_hash(args.seed, args.bytes)
    n, got = read_all(s)
    if n == 0 and args.bytes > 0:
        log("%s: closed: no bytes" % what)
        return "closed"
    if n == args.bytes and got == want:
        log("%s: ok: %d bytes intact (sha256 %s)" % (what, n, got[:16]))
        try:
            s.unwrap()	# close_notify back: a clean end for the server
        except (ssl.SSLError, OSError):
            pass
        return "ok"
    log("%s: data wrong: %d of %d bytes, sha256 %s, want %s" %
        (what, n, args.bytes, got[:16], want[:16]))
    return "corrupt"


def cmd_tcp(args):
    key = base64.b64decode(args.key)
    s = tls(args)
    req = ("SEND %d %d 0\n" % (args.bytes, args.seed)).encode()
    s.sendall(native_header(key, 1, args.host, args.tport, s) + req)
    if args.hangup:
        # Gone while the server still works on the request.
        time.sleep(0.2)
        s.close()
        log("tcp %s: hung up after the header" % args.host)
        return "hangup"
    t0 = time.monotonic()
    try:
        st = recv_exact(s, 1)[0]
    except (EOFError, OSError) as e:
        log("tcp %s: no status: %s" % (args.host, e))
        return "nostatus"
    name = STATUS.get(st, str(st))
    log("tcp %s:%d: status %d (%s) after %.2fs" % (args.host, args.tport, st,
                                                  name, time.monotonic() - t0))
    if st != 0:
        return name
    return check_stream(s, args, "tcp %s" % args.host)


def trojan_hex(pw):
    return hashlib.sha224(pw.encode()).hexdigest().encode()


def cmd_trojan(args):
    s = tls(args)
    req = ("SEND %d %d 0\n" % (args.bytes, args.seed)).encode()
    s.sendall(trojan_hex(args.password) + b"\r\n" + b"\x01" +
              dest(args.host, args.tport) + b"\r\n" + req)
    try:
        return check_stream(s, args, "trojan %s" % args.host)
    except (ssl.SSLError, OSError) as e:
        log("trojan %s: closed: %s" % (args.host, e))
        return "closed"


def frame(host, port, payload):
    return struct.pack("!H", len(payload)) + dest(host, port) + payload


def trojan_packet(host, port, payload):
    return dest(host, port) + struct.pack("!H", len(payload)) + b"\r\n" + \
        payload


def udp_replies(s, n, timeout, parse):
    """Reads replies until n arrived or timeout; returns their payloads."""
    s.settimeout(0.2)
    buf = b""
    got = []
    end = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < end:
        try:
            c = s.recv(65536)
        except (socket.timeout, ssl.SSLWantReadError):
            continue
        if not c:
            break
        buf += c
        while True:
            r = parse(buf)
            if r is None:
                break
            payload, used = r
            got.append(payload)
            buf = buf[used:]
    return got


def parse_addr(buf, off):
    if len(buf) <= off:
        return None
    atyp = buf[off]
    if atyp == 1:
        alen = 4
    elif atyp == 4:
        alen = 16
    else:
        if len(buf) <= off + 1:
            return None
        alen = 1 + buf[off + 1]
    end = off + 1 + alen + 2
    return end if len(buf) >= end else None


def parse_frame(buf):
    if len(buf) < 2:
        return None
    plen = struct.unpack("!H", buf[:2])[0]
    end = parse_addr(buf, 2)
    if end is None or len(buf) < end + plen:
        return None
    return buf[end:end + plen], end + plen


def parse_trojan(buf):
    end = parse_addr(buf, 0)
    if end is None or len(buf) < end + 4:
        return None
    plen = struct.unpack("!H", buf[end:end + 2])[0]
    if len(buf) < end + 4 + plen:
        return None
    return buf[end + 4:end + 4 + plen], end + 4 + plen


def udp_common(args, s, encode, parse):
    """One WHOAMI per name, one at a time, so that each answer (or its
    absence) belongs to one name."""
    out = []
    for host in args.host:
        s.sendall(encode(host, args.tport, b"WHOAMI"))
        got = udp_replies(s, 1, args.wait, parse)
        if got:
            log("udp %s: echo: %s" % (host, got[0].decode(errors="replace")))
            out.append("echo")
        else:
            log("udp %s: no reply within %.1fs" % (host, args.wait))
            out.append("none")
    return ",".join(out)


def cmd_udp(args):
    key = base64.b64decode(args.key)
    s = tls(args)
    s.sendall(native_header(key, 2, args.host[0], args.tport, s))
    st = recv_exact(s, 1)[0]
    log("udp association: status %d (%s)" % (st, STATUS.get(st, "?")))
    if st != 0:
        return STATUS.get(st, str(st))
    return udp_common(args, s, frame, parse_frame)


def cmd_trojan_udp(args):
    s = tls(args)
    s.sendall(trojan_hex(args.password) + b"\r\n" + b"\x03" +
              dest("0.0.0.0", 0) + b"\r\n")
    return udp_common(args, s, trojan_packet, parse_trojan)


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("tcp", "udp", "trojan", "trojan-udp"):
        q = sub.add_parser(name)
        q.add_argument("--server", required=True)
        q.add_argument("--port", type=int, default=8443)
        q.add_argument("--ca", required=True)
        q.add_argument("--sni", default="tunsplit.test")
        q.add_argument("--tport", type=int, default=9000)
        q.add_argument("--timeout", type=float, default=20)
        q.add_argument("--expect")
        if name.startswith("trojan"):
            q.add_argument("--password", required=True)
        else:
            q.add_argument("--key", required=True)
        if name.endswith("udp"):
            q.add_argument("--host", action="append", required=True)
            q.add_argument("--wait", type=float, default=2)
        else:
            q.add_argument("--host", required=True)
            q.add_argument("--bytes", type=int, default=1 << 20)
            q.add_argument("--seed", type=int, default=1)
        if name == "tcp":
            q.add_argument("--hangup", action="store_true",
                           help="close right after the header")
    args = p.parse_args()
    fn = {"tcp": cmd_tcp, "udp": cmd_udp, "trojan": cmd_trojan,
          "trojan-udp": cmd_trojan_udp}[args.cmd]
    try:
        r = fn(args)
    except (OSError, EOFError, ssl.SSLError) as e:
        log("%s: error: %s" % (args.cmd, e))
        return 2
    log("result: %s" % r)
    if args.expect is not None and r != args.expect:
        log("expected: %s" % args.expect)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
