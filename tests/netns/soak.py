#!/usr/bin/env python3
"""Many-connection apps and targets for the tunsplit fault and soak tests.

asyncio, standard library only, one process per role however many
connections it holds.  tools.py (threads) serves the data-integrity tests;
this script serves the tests that need thousands of connections, resets on
command and hostile peers at the server port.

Target protocol (`serve`): the app writes one ASCII line.

  ECHO\\n            "OK\\n", then echoes everything until EOF, then closes.
  SEND <n> <seed>\\n <n> bytes of stream <seed>, then closes.
  RST <n> <seed> <k>\\n  like SEND, but aborts (RST) after <k> bytes.
  EARLY <n> <delay> <rate>\\n  after <delay> s sends <n> bytes and its FIN
                     while reading the app's bytes at <rate> bytes/s to EOF
                     (rate 0: nothing before its FIN, then at full speed);
                     logs how many arrived and how the stream ended.

Apps print one summary line and exit 0 when everything behaved, 1 when
something did not (the line says what), 3 on usage errors.
"""

import argparse
import asyncio
import errno
import hashlib
import json
import os
import random
import resource
import socket
import ssl
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tools import tls_exporter  # noqa: E402

BLOCK = 65536


def log(*a):
    print(*a, flush=True)


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def stream_block(seed, i):
    """Block i of stream <seed>: independent of how it is read."""
    return random.Random(seed * 1000003 + i).randbytes(BLOCK)


def stream_bytes(seed, off, n):
    out = bytearray()
    while n > 0:
        i, o = divmod(off, BLOCK)
        b = stream_block(seed, i)[o:o + n]
        out += b
        off += len(b)
        n -= len(b)
    return bytes(out)


# ---- target ---------------------------------------------------------------

class Target:
    def __init__(self):
        self.live = 0
        self.total = 0
        self.resets = 0

    async def handle(self, r, w):
        self.live += 1
        self.total += 1
        try:
            line = (await r.readline()).decode(errors="replace").split()
            if not line:
                return
            if line[0] == "ECHO":
                w.write(b"OK\n")
                while True:
                    b = await r.read(BLOCK)
                    if not b:
                        break
                    w.write(b)
                    await w.drain()
            elif line[0] == "EARLY":
                # Half-close from the target's side first: after <delay>
                # s it sends <n> bytes and its FIN, while it reads what
                # the app sends at <rate> bytes/s until the app's FIN.
                n, delay, rate = int(line[1]), float(line[2]), int(line[3])
                peer = w.get_extra_info("peername")

                async def reply():
                    await asyncio.sleep(delay)
                    w.write(stream_bytes(7, 0, n))
                    await w.drain()
                    w.write_eof()
                task = asyncio.ensure_future(reply())
                got, h, end = 0, hashlib.sha256(), "eof"
                if rate == 0:	# nothing read before the reply
                    await task
                t0 = time.monotonic()
                try:
                    while True:
                        b = await r.read(BLOCK if rate == 0 else
                                         min(BLOCK, max(1024, rate // 10)))
                        if not b:
                            break
                        h.update(b)
                        got += len(b)
                        ahead = got / rate - (time.monotonic() - t0) \
                            if rate else 0
                        if ahead > 0:
                            await asyncio.sleep(ahead)
                except (ConnectionError, OSError):
                    end = "reset"
                await task
                log("soak-target: EARLY %s got %d bytes sha256 %s, %s" %
                    (peer[0], got, h.hexdigest(), end))
            elif line[0] in ("SEND", "RST"):
                n, seed = int(line[1]), int(line[2])
                stop = int(line[3]) if line[0] == "RST" else n
                off = 0
                while off < min(n, stop):
                    k = min(BLOCK, min(n, stop) - off)
                    w.write(stream_bytes(seed, off, k))
                    await w.drain()
                    off += k
                if line[0] == "RST":
                    s = w.get_extra_info("socket")
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
                    self.resets += 1
                    w.transport.abort()
                    return
        except (ConnectionError, OSError, ValueError, IndexError):
            pass
        finally:
            self.live -= 1
            if not w.transport.is_closing():
                w.close()


async def serve(args):
    t = Target()
    servers = []
    for b in args.bind:
        fam = socket.AF_INET6 if ":" in b else socket.AF_INET
        for port in args.port:
            servers.append(await asyncio.start_server(
                t.handle, b, port, family=fam, backlog=4096,
                reuse_address=True))
            log("soak-target: listening on [%s]:%d" % (b, port))
    while True:
        await asyncio.sleep(args.report)
        log("soak-target: live %d total %d resets %d" %
            (t.live, t.total, t.resets))


# ---- apps -----------------------------------------------------------------

async def open_echo(host, port, timeout):
    r, w = await asyncio.wait_for(asyncio.open_connection(host, port),
                                  timeout)
    w.write(b"ECHO\n")
    ok = await asyncio.wait_for(r.readexactly(3), timeout)
    if ok != b"OK\n":
        w.close()
        raise ConnectionError("bad greeting %r" % ok)
    return r, w


async def ping(r, w, timeout, tag=b"ping"):
    w.write(tag)
    await w.drain()
    got = await asyncio.wait_for(r.readexactly(len(tag)), timeout)
    if got != tag:
        raise ConnectionError("echo mismatch")


def errname(e):
    if isinstance(e, asyncio.TimeoutError):
        return "timeout"
    if isinstance(e, asyncio.IncompleteReadError):
        return "EOF"
    if isinstance(e, OSError) and e.errno:
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__


async def hold(args):
    """Open --conns echo connections (at most --parallel connecting at
    once), prove each with a round trip, write --ready, hold until --release
    appears (or --hold seconds), prove each again, close all."""
    raise_nofile()
    sem = asyncio.Semaphore(args.parallel)
    conns, errors = [], {}
    t0 = time.monotonic()

    async def one(i):
        async with sem:
            try:
                r, w = await open_echo(args.host, args.port, args.timeout)
                await ping(r, w, args.timeout)
                conns.append((r, w))
            except Exception as e:  # noqa: BLE001 -- counted and reported
                k = errname(e)
                errors[k] = errors.get(k, 0) + 1

    await asyncio.gather(*(one(i) for i in range(args.conns)))
    t_open = time.monotonic() - t0
    log("hold: %d/%d open in %.1fs, errors %s" %
        (len(conns), args.conns, t_open, json.dumps(errors)))
    if args.ready:
        with open(args.ready, "w") as f:
            f.write("%d\n" % len(conns))
    end = time.monotonic() + args.hold
    while time.monotonic() < end:
        if args.release and os.path.exists(args.release):
            break
        await asyncio.sleep(0.2)
    bad = 0

    async def check(c):
        nonlocal bad
        async with sem:
            try:
                await ping(c[0], c[1], args.timeout, b"again")
            except Exception:  # noqa: BLE001
                bad += 1
    await asyncio.gather(*(check(c) for c in conns))
    for r, w in conns:
        w.close()
    ok = len(conns) - bad
    log("hold: %d/%d still intact after holding; opened in %.1fs" %
        (ok, args.conns, t_open))
    want = args.min_ok if args.min_ok is not None else args.conns
    return 0 if ok >= want and (args.min_ok is not None or not errors) else 1


async def churn(args):
    """Short connections: connect, greet, one round trip, close.  --conns
    in total (or for --duration seconds), --parallel at a time.  --events:
    one line per connection, "time ok|error", for recovery analysis."""
    raise_nofile()
    done = ok = 0
    errors = {}
    ev = open(args.events, "a", buffering=1) if args.events else None
    t0 = time.monotonic()
    stop_at = t0 + args.duration if args.duration else None

    def more():
        if stop_at is not None:
            return time.monotonic() < stop_at
        return done < args.conns

    async def worker(wid):
        nonlocal done, ok
        n = 0
        while more():
            done += 1
            n += 1
            try:
                r, w = await open_echo(args.host, args.port, args.timeout)
                await ping(r, w, args.timeout, b"x%d.%d" % (wid, n))
                w.close()
                await w.wait_closed()
                ok += 1
                if ev:
                    ev.write("%.3f ok\n" % time.time())
            except Exception as e:  # noqa: BLE001
                k = errname(e)
                errors[k] = errors.get(k, 0) + 1
                if ev:
                    ev.write("%.3f %s\n" % (time.time(), k))
                if stop_at is not None:
                    await asyncio.sleep(0.05)	# no hot loop while down
    await asyncio.gather(*(worker(i) for i in range(args.parallel)))
    dt = time.monotonic() - t0
    log("churn: %d/%d ok in %.1fs (%.0f/s), errors %s" %
        (ok, done, dt, done / dt if dt else 0, json.dumps(errors)))
    if stop_at is not None:
        return 0 if ok > 0 else 1
    return 0 if ok == done else 1


async def storm(args):
    """--conns downloads of --bytes each; every second one asks the target
    to reset after a third of it.  The reset ones must end in an error with
    an intact prefix, the others complete intact."""
    raise_nofile()
    sem = asyncio.Semaphore(args.parallel)
    res = {"intact": 0, "reset_seen": 0, "bad": []}

    async def one(i):
        seed = 1000 + i
        rst = i % 2 == 1
        cut = args.bytes // 3
        async with sem:
            got = 0
            h = hashlib.sha256()
            try:
                r, w = await asyncio.wait_for(
                    asyncio.open_connection(args.host, args.port),
                    args.timeout)
                w.write(("RST %d %d %d\n" % (args.bytes, seed, cut) if rst
                         else "SEND %d %d\n" % (args.bytes, seed)).encode())
                while True:
                    b = await asyncio.wait_for(r.read(BLOCK), args.timeout)
                    if not b:
                        break
                    if b != stream_bytes(seed, got, len(b)):
                        res["bad"].append("%d: wrong bytes at %d" % (i, got))
                        w.close()
                        return
                    h.update(b)
                    got += len(b)
                w.close()
                if rst:
                    res["bad"].append("%d: clean EOF after %d bytes, "
                                      "reset expected" % (i, got))
                elif got != args.bytes:
                    res["bad"].append("%d: %d of %d bytes" %
                                      (i, got, args.bytes))
                else:
                    res["intact"] += 1
            except (ConnectionResetError, asyncio.IncompleteReadError,
                    BrokenPipeError) as e:
                if rst and got <= cut:
                    res["reset_seen"] += 1
                else:
                    res["bad"].append("%d: %s after %d bytes" %
                                      (i, errname(e), got))
            except Exception as e:  # noqa: BLE001
                res["bad"].append("%d: %s after %d bytes" % (i, errname(e),
                                                             got))
    t0 = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(args.conns)))
    log("storm: %d intact, %d resets propagated, %d bad in %.1fs %s" %
        (res["intact"], res["reset_seen"], len(res["bad"]),
         time.monotonic() - t0, "; ".join(res["bad"][:5])))
    want_rst = args.conns // 2
    return 0 if (not res["bad"] and res["reset_seen"] == want_rst and
                 res["intact"] == args.conns - want_rst) else 1


async def loris(args):
    """Open --conns TCP connections to the server port and send only the
    start of a TLS ClientHello (or nothing).  Prints how long the server
    took to close them; fails when some are still open after --within."""
    raise_nofile()
    conns, reset = [], 0
    hello = bytes.fromhex("160301") + b"\x02\x00" + b"\x01\x00\x01\xfc\x03\x03"
    for i in range(args.conns):
        try:
            r, w = await asyncio.wait_for(
                asyncio.open_connection(
                    args.host, args.port,
                    local_addr=(args.source, 0) if args.source else None),
                args.timeout)
        except (ConnectionResetError, ConnectionRefusedError):
            reset += 1	# refused at once (a per-source limit): closed
            continue
        except Exception as e:  # noqa: BLE001
            log("loris: connection %d failed: %s" % (i, errname(e)))
            return 1
        if i % 2 == 0:
            w.write(hello)
        conns.append((r, w))
    t0 = time.monotonic()
    if args.ready:
        with open(args.ready, "w") as f:
            f.write("%d\n" % len(conns))
    closed = [0.0] * reset

    async def wait_close(c):
        try:
            while await asyncio.wait_for(
                    c[0].read(4096),
                    max(0.1, t0 + args.within - time.monotonic())):
                pass
        except asyncio.TimeoutError:
            return	# still open
        except OSError:
            pass	# reset: closed as well
        closed.append(time.monotonic() - t0)
    await asyncio.gather(*(wait_close(c) for c in conns))
    for r, w in conns:
        w.close()
    last = max(closed) if closed else -1
    log("loris: %d/%d half-open connections closed by the server, %d of "
        "them within 1s (%d reset while connecting), the last after %.1fs "
        "(limit %.1fs)" %
        (len(closed), args.conns, sum(1 for t in closed if t < 1.0), reset,
         last, args.within))
    return 0 if len(closed) == args.conns else 1


def native_header(key, kind, ip, port, ts=None, nonce=None, bind=None):
    """A request header of the native protocol (doc/PROTOCOL.md): the user
    id and MAC keyed BLAKE2b-256 with the user key; version 2, bound to
    the TLS exporter value bind (tools.tls_exporter) of its connection,
    or version 1 without one (for a server with accept_v1)."""
    uid = hashlib.blake2b(b"tunsplit user id", key=key,
                          digest_size=32).digest()[:8]
    raw = socket.inet_pton(socket.AF_INET6 if ":" in ip else socket.AF_INET,
                           ip)
    atyp = 4 if len(raw) == 16 else 1
    body = struct.pack("!BBHQ16s8sB", 1 if bind is None else 2, kind, 0,
                       int(ts or time.time()), nonce or os.urandom(16), uid,
                       atyp) + raw + struct.pack("!HH", port, 0)
    h = len(body) + 32
    body = body[:2] + struct.pack("!H", h) + body[4:]
    return body + hashlib.blake2b(body + (bind or b""), key=key,
                                  digest_size=32).digest()


def auth_cases(key, target):
    """Authenticated streams that go wrong after the header: malformed and
    truncated datagram frames (frame.h), replayed and stale headers.  Each
    payload is made from the exporter value of its connection."""
    def good(b):	# a fresh nonce each time: no accidental replays
        return native_header(key, 2, target, 7, bind=b)
    first = {}

    def replayed(b):	# made on the first connection, sent on both
        return first.setdefault("hdr", good(b))
    dst = socket.inet_aton(target)
    frame = struct.pack("!HB", 5, 1) + dst + struct.pack("!H", 7) + b"hello"
    return [
        # A valid frame, then one that is malformed in each way the
        # receiver must notice as soon as the field arrives.
        ("auth-udp-length", lambda b: good(b) + frame + b"\xff\xff\x01"),
        ("auth-udp-atyp", lambda b: good(b) + frame + b"\x00\x01\x07"),
        ("auth-udp-name-empty", lambda b: good(b) + b"\x00\x01\x03\x00"),
        ("auth-udp-name-nul",
         lambda b: good(b) + b"\x00\x01\x03\x03a\x00b\x00\x07x"),
        # A frame cut short by the end of the stream.
        ("auth-udp-truncated", lambda b: good(b) + frame[:9]),
        ("auth-icmp-truncated",
         lambda b: native_header(key, 3, target, 0, bind=b) + frame[:3]),
        # The same header twice: the second, on another TLS connection,
        # does not verify there (bound to the first).
        ("auth-replay-first", replayed),
        ("auth-replay-second", replayed),
        ("auth-stale", lambda b: native_header(key, 1, target, 7,
                                               ts=time.time() - 100000,
                                               bind=b)),
        ("auth-kind", lambda b: native_header(key, 9, target, 7, bind=b)),
        # Version 1, unbound: refused by a server without accept_v1.
        ("auth-v1", lambda b: native_header(key, 1, target, 7)),
    ]


async def garbage(args):
    """Hostile bytes at the server port: random garbage, truncated and
    corrupted TLS records in the clear, and -- inside a real TLS session --
    garbage and truncated request headers, and with --key authenticated
    streams with malformed or truncated frames, a replayed, a stale and an
    unknown-kind header.  Every connection must be closed by the server
    within --within seconds."""
    rng = random.Random(args.seed)
    ctx = ssl.create_default_context(cafile=args.ca)
    cases = []
    for i in range(args.rounds):
        n = rng.choice([1, 5, 64, 517, 4096, 70000])
        cases.append(("plain-random-%d" % n, False, rng.randbytes(n)))
        cases.append(("plain-tls-header-only", False,
                      bytes.fromhex("1603010200")))
        cases.append(("plain-tls-bad-length", False,
                      bytes.fromhex("16030140ff") + rng.randbytes(64)))
        cases.append(("tls-random-%d" % n, True, rng.randbytes(n)))
        cases.append(("tls-truncated-header", True, rng.randbytes(7)))
        cases.append(("tls-zeros", True, bytes(600)))
    if args.key:
        import base64
        for name, payload in auth_cases(base64.b64decode(args.key),
                                        args.target):
            cases.append((name, True, payload))
    fails = []
    t0 = time.monotonic()

    async def one(name, use_tls, payload):
        try:
            if use_tls:
                r, w = await asyncio.wait_for(asyncio.open_connection(
                    args.host, args.port, ssl=ctx,
                    server_hostname=args.sni), args.timeout)
            else:
                r, w = await asyncio.wait_for(asyncio.open_connection(
                    args.host, args.port), args.timeout)
            if callable(payload):
                payload = payload(tls_exporter(
                    w.get_extra_info("ssl_object")))
            w.write(payload)
            try:
                await w.drain()
                if name.startswith("auth-") and name.endswith("truncated"):
                    # asyncio cannot half-close TLS: end the stream with
                    # the frame incomplete; the server must cope.
                    await asyncio.sleep(0.3)
                    w.close()
                    return
                if name == "auth-replay-first":
                    # Accepted: status 0, then the stream waits for
                    # frames; we end it.
                    st = await asyncio.wait_for(r.readexactly(1),
                                                args.within)
                    if st != b"\x00":
                        fails.append("%s: status %r" % (name, st))
                    w.close()
                    return
                while await asyncio.wait_for(r.read(4096), args.within):
                    pass
            except asyncio.TimeoutError:
                fails.append("%s: still open after %.0fs" %
                             (name, args.within))
            except (OSError, ssl.SSLError, asyncio.IncompleteReadError):
                pass	# closed or reset: fine
            w.close()
        except (OSError, ssl.SSLError) as e:
            if use_tls:
                fails.append("%s: TLS handshake failed: %s" %
                             (name, errname(e)))
    sem = asyncio.Semaphore(32)

    async def limited(c):
        async with sem:
            await one(*c)
    # The replay pair in order, the rest at once.
    order = [c for c in cases if not c[0].startswith("auth-replay")]
    await asyncio.gather(*(limited(c) for c in order))
    for c in cases:
        if c[0].startswith("auth-replay"):
            await one(*c)
    log("garbage: %d hostile connections, %d not closed properly in %.1fs %s"
        % (len(cases), len(fails), time.monotonic() - t0,
           "; ".join(fails[:5])))
    return 0 if not fails else 1


async def early(args):
    """Upload --bytes of stream 11 and half-close, while the target
    answers and closes its side first (EARLY): prints what came back.  The
    target logs what it received; the test compares."""
    r, w = await asyncio.wait_for(asyncio.open_connection(args.host,
                                                          args.port),
                                  args.timeout)
    w.write(("EARLY %d %s %d\n" % (args.reply, args.delay,
                                   args.rate)).encode())
    data = stream_bytes(11, 0, args.bytes)
    w.write(data)
    await w.drain()
    w.write_eof()
    got = b""
    try:
        while True:
            b = await asyncio.wait_for(r.read(BLOCK), args.timeout)
            if not b:
                break
            got += b
    except (ConnectionError, OSError) as e:
        log("early: %s after %d reply bytes" % (errname(e), len(got)))
        return 1
    w.close()
    log("early: sent %d bytes sha256 %s and FIN; reply %d bytes %s" %
        (len(data), hashlib.sha256(data).hexdigest(), len(got),
         "intact" if got == stream_bytes(7, 0, args.reply) else "WRONG"))
    return 0 if got == stream_bytes(7, 0, args.reply) else 1


async def stall(args):
    """--conns apps with small receive windows that stall, all at once.
    Each sets SO_RCVBUF (4 to 64 KiB) and TCP_MAXSEG (536, 1220, 1460)
    before its connect and downloads (SEND) between half and four times
    its buffer -- or, every fourth, uploads as much to ECHO, half-closes
    and reads the echo.  It reads nothing for a while, so that the rest
    and the FIN wait in the stack; then a little at a time, pausing about
    2 s after each read (longer than lwIP's first persist interval, 1.5 s:
    the window it sees is open but smaller than what it holds), then the
    rest at full speed.  Every byte must arrive, and the stream must end
    exactly at its end: a FIN too early is a clean EOF, short.
    --mss picks the MSS from its own list, --up-every K makes every Kth an
    upload (0: none, for a path with no half-close), --bulk N makes the
    second and eighth of every eight move N bytes."""
    res = {"down": 0, "up": 0, "bad": []}
    msses = [int(m) for m in args.mss.split(",")]

    async def one(i):
        r = random.Random(args.seed * 1000003 + i)
        rcvbuf = r.choice([4096, 8192, 16384, 32768, 65536])
        mss = r.choice(msses)
        n = r.randint(rcvbuf // 2, rcvbuf * 4)
        up = args.up_every > 0 and i % args.up_every == args.up_every - 1
        if args.bulk and i % 8 in (1, 7):	# past the stall, at full speed
            n = args.bulk
        seed = args.seed * 1000 + i
        want = (b"OK\n" if up else b"") + stream_bytes(seed, 0, n)
        what = "%d: %s %d bytes (rcvbuf %d, mss %d)" % (
            i, "up" if up else "down", n, rcvbuf, mss)
        loop = asyncio.get_running_loop()
        s = socket.socket(socket.AF_INET6 if ":" in args.host else
                          socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
        s.setblocking(False)
        got, sender = 0, None
        try:
            await asyncio.wait_for(loop.sock_connect(
                s, (args.host, args.port)), args.timeout)
            if up:
                async def send():
                    await loop.sock_sendall(s, b"ECHO\n" + want[3:])
                    s.shutdown(socket.SHUT_WR)
                sender = asyncio.ensure_future(send())
            else:
                await loop.sock_sendall(s, b"SEND %d %d\n" % (n, seed))
            await asyncio.sleep(0.5 + r.random())
            stalls = r.randint(1, 3)
            while True:
                k = r.randint(1024, rcvbuf // 2) if stalls > 0 else BLOCK
                b = await asyncio.wait_for(loop.sock_recv(s, k),
                                           args.timeout)
                if not b:
                    break
                if b != want[got:got + len(b)]:
                    res["bad"].append("%s: wrong bytes at %d" % (what, got))
                    return
                got += len(b)
                if stalls > 0:
                    stalls -= 1
                    await asyncio.sleep(1.8 + r.random())
            if sender is not None:
                await asyncio.wait_for(sender, args.timeout)
            if got != len(want):
                res["bad"].append("%s: clean EOF after %d" % (what, got))
            else:
                res["up" if up else "down"] += 1
        except Exception as e:  # noqa: BLE001 -- reported
            res["bad"].append("%s: %s after %d" % (what, errname(e), got))
        finally:
            if sender is not None and not sender.done():
                sender.cancel()
            s.close()

    t0 = time.monotonic()
    await asyncio.gather(*(one(i) for i in range(args.conns)))
    log("stall: %d/%d intact (%d down, %d up), %d bad in %.1fs %s" %
        (res["down"] + res["up"], args.conns, res["down"], res["up"],
         len(res["bad"]), time.monotonic() - t0, "; ".join(res["bad"][:5])))
    return 0 if not res["bad"] else 1


def recovery(args):
    """From churn --events and a list of server restart times (when the
    server listened again): the delay to the first successful flow after
    each restart."""
    evs = []
    with open(args.events) as f:
        for line in f:
            t, what = line.split()
            evs.append((float(t), what == "ok"))
    evs.sort()
    out = []
    for r in args.restarts:
        first = next((t for t, ok in evs if ok and t >= r), None)
        out.append(None if first is None else first - r)
    if any(x is None for x in out):
        log("recovery: no successful flow after a restart: %s" % out)
        return 1
    log("recovery: first successful flow %s s after each restart (max %.2f)"
        % (" ".join("%.2f" % x for x in out), max(out)))
    if max(out) > args.limit:
        log("recovery: slower than %.1fs" % args.limit)
        return 1
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--bind", action="append", required=True)
    s.add_argument("--port", type=int, action="append", required=True)
    s.add_argument("--report", type=float, default=5)

    def app(name, **kw):
        a = sub.add_parser(name)
        a.add_argument("--host", required=True)
        a.add_argument("--port", type=int, required=True)
        a.add_argument("--timeout", type=float, default=20)
        a.add_argument("--parallel", type=int, default=kw.get("par", 64))
        return a
    a = app("hold", par=200)
    a.add_argument("--conns", type=int, required=True)
    a.add_argument("--hold", type=float, default=60)
    a.add_argument("--ready")
    a.add_argument("--release")
    a.add_argument("--min-ok", type=int)
    a = app("churn", par=4)
    a.add_argument("--conns", type=int, default=1000)
    a.add_argument("--duration", type=float)
    a.add_argument("--events")
    a = app("storm", par=100)
    a.add_argument("--conns", type=int, default=100)
    a.add_argument("--bytes", type=int, default=3 << 20)
    a = app("stall")
    a.add_argument("--conns", type=int, default=60)
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--mss", default="536,1220,1460")
    a.add_argument("--up-every", type=int, default=4)
    a.add_argument("--bulk", type=int, default=0)
    a = app("loris")
    a.add_argument("--conns", type=int, default=200)
    a.add_argument("--within", type=float, default=10)
    a.add_argument("--ready")
    a.add_argument("--source", help="local address to connect from")
    a = app("garbage")
    a.add_argument("--ca", required=True)
    a.add_argument("--sni", required=True)
    a.add_argument("--rounds", type=int, default=5)
    a.add_argument("--seed", type=int, default=1)
    a.add_argument("--within", type=float, default=15)
    a.add_argument("--key", help="user key (base64): authenticated cases")
    a.add_argument("--target", default="10.77.2.2",
                   help="destination of the authenticated cases")
    a = app("early")
    a.add_argument("--bytes", type=int, default=1 << 20)
    a.add_argument("--reply", type=int, default=1000)
    a.add_argument("--delay", type=float, default=4)
    a.add_argument("--rate", type=int, default=200000)
    r = sub.add_parser("recovery")
    r.add_argument("--events", required=True)
    r.add_argument("--restarts", type=float, nargs="+", required=True)
    r.add_argument("--limit", type=float, default=10)
    args = p.parse_args()
    if args.cmd == "recovery":
        return recovery(args)
    fn = {"serve": serve, "hold": hold, "churn": churn, "storm": storm,
          "stall": stall, "loris": loris, "garbage": garbage, "early": early}[args.cmd]
    try:
        return asyncio.run(fn(args))
    except KeyboardInterrupt:
        return 1


if __name__ == "__main__":
    sys.exit(main())
