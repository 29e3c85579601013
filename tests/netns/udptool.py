#!/usr/bin/env python3
"""UDP and raw-packet apps for the tunsplit namespace tests (UDP, ICMP,
malformed packets).  Standard library only.

  serve     UDP echo server on --bind addresses (the target).  A datagram
            "WHOAMI" is answered with "ADDR <ip> <port>": the source the
            target saw, i.e. the tunnel server's mapped address.
  echo      sends datagrams of --sizes bytes (random, seeded) and checks
            every echo byte for byte; retries a lost one a few times.
  cone      learns the mapped address from the echo server, writes it to
            --out, then waits for a datagram from any *other* peer (the
            test makes one send to the mapped address): full cone.
  send      sends one datagram (--payload) to --to HOST:PORT (the peer).
  many      --n sockets at once, one datagram each, every echo checked.
  inject    writes malformed IPv4/IPv6 packets straight into a TUN through
            an AF_PACKET socket (past the kernel's own checks).
  stream    echoes --count datagrams paced over --seconds; all must return.
  fan       one socket sends datagrams of --sizes to every --to HOST:PORT
            and checks each echo byte for byte and that it comes from the
            destination it went to (one association, many peers).
  refused   sends one datagram on a connected socket and expects the
            kernel to report an ICMP error (--errno) within --timeout.
  gso       one send of --bytes with UDP_SEGMENT --segment (the kernel,
            or the TUN's reader, cuts it into datagrams); every datagram
            must come back as sent, none larger than --segment; retried
            a few times while some are missing.

Exit status: 0 all intact, 1 data wrong or missing, 2 socket error.
"""

import argparse
import hashlib
import ipaddress
import os
import random
import resource
import select
import socket
import struct
import sys
import threading
import time


def log(*a):
    print(*a, flush=True)


def family_of(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def parse_hostport(s):
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


# ---- serve ------------------------------------------------------------------

def serve_sock(sock):
    while True:
        data, peer = sock.recvfrom(65535)
        if data == b"WHOAMI":
            reply = ("ADDR %s %d" % (peer[0], peer[1])).encode()
        else:
            reply = data
        try:
            sock.sendto(reply, peer)
        except OSError as e:
            log("serve: sendto %s: %s" % (peer, e))


def cmd_serve(args):
    threads = []
    for b in args.bind:
        s = socket.socket(family_of(b), socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.bind((b, args.port))
        t = threading.Thread(target=serve_sock, args=(s,), daemon=True)
        t.start()
        threads.append(t)
        log("serve: udp echo on %s port %d" % (b, args.port))
    for t in threads:
        t.join()
    return 0


# ---- echo -------------------------------------------------------------------

def exchange(sock, dest, payload, timeout, tries, match=None):
    """Sends payload, waits for its exact echo (or a reply match()
    accepts).  Returns (reply, peer) or None.  Replies to earlier attempts
    are skipped by content."""
    match = match or (lambda d: d == payload)
    for _ in range(tries):
        sock.sendto(payload, dest)
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                break
            r, _, _ = select.select([sock], [], [], left)
            if not r:
                break
            data, peer = sock.recvfrom(65535)
            if match(data):
                return data, peer
            log("echo: unexpected %d bytes from %s" % (len(data), peer))
    return None


def cmd_echo(args):
    dest = (args.host, args.port)
    sock = socket.socket(family_of(args.host), socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    rng = random.Random(args.seed)
    ok = True
    for size in [int(x) for x in args.sizes.split(",")]:
        payload = rng.randbytes(size)
        t0 = time.monotonic()
        got = exchange(sock, dest, payload, args.timeout, args.tries)
        if got is None:
            log("echo: %d bytes to %s: no intact echo" % (size, dest))
            ok = False
            continue
        data, peer = got
        if ipaddress.ip_address(peer[0]) != ipaddress.ip_address(args.host) \
                or peer[1] != args.port:
            log("echo: reply from %s, expected %s" % (peer, dest))
            ok = False
            continue
        log("echo: %d bytes intact (sha256 %s) in %.1f ms" % (
            size, hashlib.sha256(data).hexdigest()[:16],
            (time.monotonic() - t0) * 1000))
    return 0 if ok else 1


# ---- cone -------------------------------------------------------------------

def cmd_cone(args):
    dest = (args.host, args.port)
    sock = socket.socket(family_of(args.host), socket.SOCK_DGRAM)
    got = exchange(sock, dest, b"WHOAMI", 2, 5,
                   lambda d: d.startswith(b"ADDR "))
    if got is None:
        log("cone: no answer to WHOAMI")
        return 1
    mapped = got[0].decode().split()
    if mapped[0] != "ADDR":
        log("cone: bad answer %r" % got[0])
        return 1
    with open(args.out + ".tmp", "w") as f:
        f.write("%s %s\n" % (mapped[1], mapped[2]))
    os.rename(args.out + ".tmp", args.out)
    log("cone: mapped address %s port %s" % (mapped[1], mapped[2]))
    end = time.monotonic() + args.wait
    while time.monotonic() < end:
        r, _, _ = select.select([sock], [], [], end - time.monotonic())
        if not r:
            break
        data, peer = sock.recvfrom(65535)
        if peer[:2] == dest:
            continue
        if data == args.expect.encode():
            log("cone: %r from unsolicited peer %s" % (data, peer[:2]))
            return 0
        log("cone: unexpected %r from %s" % (data, peer))
    log("cone: nothing from another peer within %d s" % args.wait)
    return 1


def cmd_send(args):
    host, port = parse_hostport(args.to)
    sock = socket.socket(family_of(host), socket.SOCK_DGRAM)
    for _ in range(args.repeat):
        sock.sendto(args.payload.encode(), (host, port))
        time.sleep(0.2)
    log("send: %r to %s:%d" % (args.payload, host, port))
    return 0


# ---- many -------------------------------------------------------------------

def cmd_many(args):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = args.n + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(want, soft),
                                                     max(want, hard)))
    dest = (args.host, args.port)
    socks = []
    for i in range(args.n):
        s = socket.socket(family_of(args.host), socket.SOCK_DGRAM)
        s.setblocking(False)
        socks.append(s)
    pending = {}
    for i, s in enumerate(socks):
        pending[s.fileno()] = (s, ("assoc %d" % i).encode())
    start = time.monotonic()
    end = start + args.timeout
    attempt = 0
    poller = select.poll()
    for s in socks:
        poller.register(s, select.POLLIN)
    while pending and time.monotonic() < end:
        if attempt < args.tries:
            for s, msg in list(pending.values()):
                try:
                    s.sendto(msg, dest)
                except BlockingIOError:
                    pass
                if attempt == 0 and args.pace:
                    time.sleep(args.pace)
            attempt += 1
        until = time.monotonic() + min(args.wait,
                                       max(0.0, end - time.monotonic()))
        while pending and time.monotonic() < until:
            for fd, _ in poller.poll(200):
                if fd not in pending:
                    continue
                s, msg = pending[fd]
                try:
                    data, peer = s.recvfrom(65535)
                except BlockingIOError:
                    continue
                if data == msg:
                    del pending[fd]
    log("many: %d of %d sockets got their echo (%d attempts, %.1f s)" % (
        args.n - len(pending), args.n, attempt, time.monotonic() - start))
    if args.hold:
        time.sleep(args.hold)
    for s in socks:
        s.close()
    return 0 if not pending else 1


# ---- gso --------------------------------------------------------------------

def cmd_gso(args):
    dest = (args.host, args.port)
    sock = socket.socket(family_of(args.host), socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_UDP, 103, args.segment)	# UDP_SEGMENT
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    data = random.Random(args.seed).randbytes(args.bytes)
    want = {data[i:i + args.segment]
            for i in range(0, len(data), args.segment)}
    got = set()
    for _ in range(args.tries):
        sock.sendto(data, dest)
        end = time.monotonic() + args.timeout
        while got != want and time.monotonic() < end:
            r, _, _ = select.select([sock], [], [], end - time.monotonic())
            if not r:
                break
            d, peer = sock.recvfrom(65535)
            if d not in want:
                log("gso: an echo of %d bytes that was not sent" % len(d))
                return 1
            got.add(d)
        if got == want:
            log("gso: %d bytes in %d datagrams of %d echoed intact" % (
                len(data), len(want), args.segment))
            return 0
    log("gso: %d of %d datagrams echoed" % (len(got), len(want)))
    return 1


# ---- stream -----------------------------------------------------------------

def cmd_stream(args):
    dest = (args.host, args.port)
    sock = socket.socket(family_of(args.host), socket.SOCK_DGRAM)
    sock.settimeout(args.timeout)
    missing = 0
    gap = args.seconds / args.count
    for i in range(args.count):
        msg = ("stream %d " % i).encode() + bytes(64)
        if exchange(sock, dest, msg, args.timeout, 3) is None:
            missing += 1
        time.sleep(gap)
    log("stream: %d of %d echoes intact" % (args.count - missing, args.count))
    return 0 if missing == 0 else 1


# ---- inject -----------------------------------------------------------------

def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def ip4(src, dst, proto, payload, ident=1, frag=0, tot=None):
    tot = 20 + len(payload) if tot is None else tot
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, tot, ident, frag, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def udp4(src, dst, sport, dport, data, sum_fix=None, ulen=None):
    ulen = 8 + len(data) if ulen is None else ulen
    u = struct.pack("!HHHH", sport, dport, ulen, 0) + data
    ph = socket.inet_aton(src) + socket.inet_aton(dst) + \
        struct.pack("!BBH", 0, 17, len(u))
    c = csum(ph + u) if sum_fix is None else sum_fix
    return u[:6] + struct.pack("!H", c) + u[8:]


def ip6(src, dst, nh, payload, plen=None):
    plen = len(payload) if plen is None else plen
    return struct.pack("!IHBB16s16s", 0x60000000, plen, nh, 64,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst)) + payload


def udp6(src, dst, sport, dport, data, sum_fix=None, ulen=None):
    ulen = 8 + len(data) if ulen is None else ulen
    u = struct.pack("!HHHH", sport, dport, ulen, 0) + data
    ph = socket.inet_pton(socket.AF_INET6, src) + \
        socket.inet_pton(socket.AF_INET6, dst) + \
        struct.pack("!IxxxB", len(u), 17)
    c = csum(ph + u) if sum_fix is None else sum_fix
    return u[:6] + struct.pack("!H", c) + u[8:]


# What one round of malformed() adds to the client's counters.
ROUND_MALFORMED, ROUND_BADSUM, ROUND_INVALID_FRAG = 7, 4, 1


def malformed(src4, dst4, src6, dst6, port, ident):
    """(name, packet, family) of packets that must be counted and dropped:
    each is malformed or has a wrong checksum."""
    d = b"malformed"
    good4 = udp4(src4, dst4, 40001, port, d)
    good6 = udp6(src6, dst6, 40001, port, d)
    bad = []
    bad.append(("v4 bad udp checksum", ip4(src4, dst4, 17,
                udp4(src4, dst4, 40001, port, d, sum_fix=0x1234)), 4))
    bad.append(("v4 udp length > packet", ip4(src4, dst4, 17,
                udp4(src4, dst4, 40001, port, d, ulen=200)), 4))
    bad.append(("v4 udp length < 8", ip4(src4, dst4, 17,
                udp4(src4, dst4, 40001, port, d, ulen=4)), 4))
    bad.append(("v4 truncated udp header", ip4(src4, dst4, 17,
                good4[:5]), 4))
    p = bytearray(ip4(src4, dst4, 17, good4))
    p[8] = 1   # TTL changed, header checksum now wrong
    bad.append(("v4 bad header checksum", bytes(p), 4))
    bad.append(("v6 zero udp checksum", ip6(src6, dst6, 17,
                udp6(src6, dst6, 40001, port, d, sum_fix=0)), 6))
    bad.append(("v6 bad udp checksum", ip6(src6, dst6, 17,
                udp6(src6, dst6, 40001, port, d, sum_fix=0xbeef)), 6))
    bad.append(("v6 udp length != payload", ip6(src6, dst6, 17,
                udp6(src6, dst6, 40001, port, d, ulen=12)), 6))
    bad.append(("v6 truncated udp header", ip6(src6, dst6, 17,
                good6[:6]), 6))
    bad.append(("v6 truncated extension header", ip6(src6, dst6, 0,
                bytes([17, 4]) + bytes(6)), 6))
    bad.append(("v6 extension header loop", ip6(src6, dst6, 60,
                b"".join(bytes([60, 0]) + bytes(6) for _ in range(12))), 6))
    frag = struct.pack("!BBHI", 17, 0, (8 << 3) | 1, ident)
    bad.append(("v6 fragment not a multiple of 8", ip6(src6, dst6, 44,
                frag + good6[:13]), 6))
    return bad


def cmd_inject(args):
    s4 = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM,
                       socket.htons(0x0800))
    s6 = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM,
                       socket.htons(0x86dd))
    ifindex = socket.if_nametoindex(args.dev)
    n = 0
    for r in range(args.rounds):
        for name, pkt, fam in malformed(args.src4, args.dst4, args.src6,
                                        args.dst6, args.port, 1000 + r):
            s, proto = (s4, 0x0800) if fam == 4 else (s6, 0x86dd)
            s.sendto(pkt, (args.dev, proto, 0, 0, b""))
            n += 1
            if args.verbose:
                log("inject: %s (%d bytes)" % (name, len(pkt)))
    log("inject: %d packets into %s (index %d): expect %d malformed, "
        "%d bad checksum, %d invalid fragments" % (
            n, args.dev, ifindex, ROUND_MALFORMED * args.rounds,
            ROUND_BADSUM * args.rounds, ROUND_INVALID_FRAG * args.rounds))
    return 0


# ---- fan ----------------------------------------------------------------------

def cmd_fan(args):
    targets = [parse_hostport(t) for t in args.to]
    fam = family_of(targets[0][0])
    sock = socket.socket(fam, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    rng = random.Random(args.seed)
    ok, n = True, 0
    for size in [int(x) for x in args.sizes.split(",")]:
        for host, port in targets:
            payload = rng.randbytes(size)
            got = exchange(sock, (host, port), payload, args.timeout,
                           args.tries)
            if got is None:
                log("fan: %d bytes to %s:%d: no intact echo" % (
                    size, host, port))
                ok = False
                continue
            peer = got[1]
            if ipaddress.ip_address(peer[0]) != ipaddress.ip_address(host) \
                    or peer[1] != port:
                log("fan: reply from %s, expected %s:%d" % (peer, host,
                                                           port))
                ok = False
                continue
            n += 1
            log("fan: %d bytes intact from %s:%d (sha256 %s)" % (
                size, host, port,
                hashlib.sha256(got[0]).hexdigest()[:16]))
    log("fan: %d datagrams intact, %d destinations, one local port %d" % (
        n, len(targets), sock.getsockname()[1]))
    return 0 if ok else 1


def cmd_refused(args):
    host, port = parse_hostport(args.to)
    sock = socket.socket(family_of(host), socket.SOCK_DGRAM)
    sock.connect((host, port))
    sock.settimeout(args.timeout)
    t0 = time.monotonic()
    try:
        sock.send(b"anyone there?")
        sock.recv(65535)
    except socket.timeout:
        log("refused: no error within %.1f s" % args.timeout)
        return 1
    except OSError as e:
        name = errno_name(e.errno)
        log("refused: %s (%s) after %.1f ms" % (
            name, e.strerror, (time.monotonic() - t0) * 1000))
        return 0 if name == args.errno else 1
    log("refused: got an answer")
    return 1


def errno_name(n):
    import errno
    return errno.errorcode.get(n, str(n))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("serve")
    p.add_argument("--bind", action="append", required=True)
    p.add_argument("--port", type=int, default=7)
    p = sub.add_parser("echo")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, default=7)
    p.add_argument("--sizes", default="1,1400,8000,65000")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=3)
    p.add_argument("--tries", type=int, default=3)
    p = sub.add_parser("cone")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, default=7)
    p.add_argument("--out", required=True)
    p.add_argument("--wait", type=int, default=15)
    p.add_argument("--expect", default="CONE-HELLO")
    p = sub.add_parser("send")
    p.add_argument("--to", required=True)
    p.add_argument("--payload", default="CONE-HELLO")
    p.add_argument("--repeat", type=int, default=3)
    p = sub.add_parser("many")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, default=7)
    p.add_argument("--n", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--tries", type=int, default=5)
    p.add_argument("--pace", type=float, default=0)
    p.add_argument("--hold", type=float, default=0)
    p.add_argument("--wait", type=float, default=5,
                   help="seconds to wait for echoes before resending")
    p = sub.add_parser("stream")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, default=7)
    p.add_argument("--count", type=int, default=50)
    p.add_argument("--seconds", type=float, default=5)
    p.add_argument("--timeout", type=float, default=2)
    p = sub.add_parser("fan")
    p.add_argument("--to", action="append", required=True)
    p.add_argument("--sizes", default="1,1400,8000")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=3)
    p.add_argument("--tries", type=int, default=3)
    p = sub.add_parser("refused")
    p.add_argument("--to", required=True)
    p.add_argument("--errno", required=True)
    p.add_argument("--timeout", type=float, default=2)
    p = sub.add_parser("inject")
    p.add_argument("--dev", required=True)
    p.add_argument("--src4", required=True)
    p.add_argument("--dst4", required=True)
    p.add_argument("--src6", required=True)
    p.add_argument("--dst6", required=True)
    p.add_argument("--port", type=int, default=7)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--verbose", action="store_true")
    p = sub.add_parser("gso")
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, default=7)
    p.add_argument("--bytes", type=int, default=12032)
    p.add_argument("--segment", type=int, default=1200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--timeout", type=float, default=2)
    p.add_argument("--tries", type=int, default=3)
    args = ap.parse_args()
    try:
        return globals()["cmd_" + args.cmd](args)
    except OSError as e:
        log("%s: %s" % (args.cmd, e))
        return 2


if __name__ == "__main__":
    sys.exit(main())
