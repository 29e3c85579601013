#!/usr/bin/env python3
"""Apps and targets for the tunsplit network-namespace tests.

One script, several subcommands, standard library only.  The target side is
`serve`; everything else is an app that talks to it through the tunnel.

Target protocol: the app opens a connection and writes one ASCII line.

  SINK\\n                 the target reads to EOF while hashing, then replies
                         "<count> <sha256>\\n" and closes.
  SEND <n> <seed> <bps>\\n the target sends <n> bytes of the pseudo-random
                         stream <seed> (paced to <bps> bytes/s, 0 = no limit),
                         then closes its write side.
  EOFSEND <n> <seed>\\n   the target reads to EOF while hashing, then replies
                         "<count> <sha256>\\n" followed by <n> bytes of stream
                         <seed>, then closes (the half-close test).

Data integrity is always checked with SHA-256 on both ends; an exit code
alone proves nothing.  App exit status: 0 data intact, 1 data wrong or
short, 2 connection error (errno printed), 3 usage.
"""

import argparse
import errno
import hashlib
import os
import random
import socket
import sys
import threading
import time

CHUNK = 256 * 1024


# The request header's TLS binding (doc/PROTOCOL.md, version 2).
BIND_LABEL = b"EXPORTER-tunsplit-header"
BIND_LEN = 32


def tls_exporter(sslsock, label=BIND_LABEL, n=BIND_LEN):
    """The TLS exporter value (RFC 8446 section 7.5, no context) of a
    connected ssl.SSLSocket or ssl.SSLObject, which Python's ssl module
    does not offer: libssl's SSL_export_keying_material() on the SSL *
    that CPython's _ssl object holds right after its object header and
    the weak reference to its socket.  The pointer is checked first: it
    must be TLS 1.3 with the cipher Python reports, or this raises."""
    import ctypes
    lib = ctypes.CDLL("libssl.so.3")
    lib.SSL_version.argtypes = [ctypes.c_void_p]
    lib.SSL_get_current_cipher.argtypes = [ctypes.c_void_p]
    lib.SSL_get_current_cipher.restype = ctypes.c_void_p
    lib.SSL_CIPHER_get_name.argtypes = [ctypes.c_void_p]
    lib.SSL_CIPHER_get_name.restype = ctypes.c_char_p
    lib.SSL_export_keying_material.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
        ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    obj = sslsock._sslobj
    ptr = ctypes.c_void_p.from_address(
        id(obj) + 3 * ctypes.sizeof(ctypes.c_void_p)).value
    if not ptr or lib.SSL_version(ptr) != 0x0304 or \
            lib.SSL_CIPHER_get_name(lib.SSL_get_current_cipher(ptr)) != \
            sslsock.cipher()[0].encode():
        raise RuntimeError("tls_exporter: no TLS 1.3 SSL object found")
    out = ctypes.create_string_buffer(n)
    if lib.SSL_export_keying_material(ptr, out, n, label, len(label),
                                      None, 0, 0) != 1:
        raise RuntimeError("tls_exporter: SSL_export_keying_material")
    return out.raw


def parse_size(s):
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    s = s.strip().lower().rstrip("ib")
    if s and s[-1] in mult:
        return int(float(s[:-1]) * mult[s[-1]])
    return int(s)


def stream(seed, n, chunk=CHUNK):
    """The deterministic pseudo-random byte stream number <seed>, <n> bytes
    long, in pieces of <chunk> bytes.  Generated in fixed 64 KiB blocks
    (randbytes() output depends on the sizes asked for), so the bytes do not
    depend on <chunk>."""
    rng = random.Random(seed)
    buf = b""
    left = n
    while left > 0:
        k = min(chunk, left)
        while len(buf) < k:
            buf += rng.randbytes(65536)
        yield buf[:k]
        buf = buf[k:]
        left -= k


def stream_hash(seed, n):
    h = hashlib.sha256()
    for b in stream(seed, n):
        h.update(b)
    return h.hexdigest()


class Pacer:
    """Sleeps so that the bytes passed to take() average <rate> per second
    (rate 0: never sleeps).  switch_after makes it stop pacing after that
    many seconds from creation: the slow reader that speeds up."""

    def __init__(self, rate, switch_after=None):
        self.rate = rate
        self.start = time.monotonic()
        self.switch_after = switch_after
        self.done = 0

    def slow(self):
        if self.rate <= 0:
            return False
        if self.switch_after is None:
            return True
        return time.monotonic() - self.start < self.switch_after

    def take(self, n):
        self.done += n
        if not self.slow():
            return
        due = self.start + self.done / self.rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)


def errname(e):
    if isinstance(e, socket.timeout):
        return "timeout"
    if getattr(e, "errno", None):
        return errno.errorcode.get(e.errno, str(e.errno))
    return type(e).__name__


_log_lock = threading.Lock()


def log(*a):
    # One write per line under a lock: target threads must not interleave.
    line = " ".join(str(x) for x in a) + "\n"
    with _log_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


# ---- target ---------------------------------------------------------------

def recv_line(conn, limit=256):
    buf = b""
    while not buf.endswith(b"\n"):
        b = conn.recv(1)
        if not b:
            raise ConnectionError("EOF before request line")
        buf += b
        if len(buf) > limit:
            raise ValueError("request line too long")
    return buf.decode("ascii").split()


def read_to_eof(conn, pacer=None, readsz=CHUNK):
    h = hashlib.sha256()
    count = 0
    while True:
        sz = 4096 if pacer is not None and pacer.slow() else readsz
        b = conn.recv(sz)
        if not b:
            return count, h.hexdigest()
        h.update(b)
        count += len(b)
        if pacer is not None:
            pacer.take(len(b))


def send_stream(conn, seed, n, rate=0, progress=None):
    pacer = Pacer(rate)
    h = hashlib.sha256()
    sent = 0
    chunk = CHUNK if rate <= 0 else max(1024, min(CHUNK, rate // 20))
    for b in stream(seed, n, chunk):
        conn.sendall(b)
        h.update(b)
        sent += len(b)
        pacer.take(len(b))
        if progress:
            progress(sent)
    return sent, h.hexdigest()


def linger_close(conn):
    """Close after the peer's EOF so that the kernel sends FIN, not RST."""
    try:
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(30)
        while conn.recv(65536):
            pass
    except OSError:
        pass
    conn.close()


def serve_one(conn, peer, args):
    t0 = time.monotonic()
    try:
        req = recv_line(conn)
        if req[0] == "SINK":
            pacer = None
            if args.slow_rate:
                pacer = Pacer(args.slow_rate, args.slow_secs)
            count, digest = read_to_eof(conn, pacer)
            conn.sendall(("%d %s\n" % (count, digest)).encode())
            log("target: %s SINK %d bytes sha256 %s in %.2fs" %
                (peer, count, digest, time.monotonic() - t0))
            conn.close()
        elif req[0] == "SEND":
            n, seed, rate = int(req[1]), int(req[2]), int(req[3])
            sent, digest = send_stream(conn, seed, n, rate)
            log("target: %s SEND %d bytes sha256 %s in %.2fs" %
                (peer, sent, digest, time.monotonic() - t0))
            linger_close(conn)
        elif req[0] == "EOFSEND":
            n, seed = int(req[1]), int(req[2])
            count, digest = read_to_eof(conn)
            log("target: %s EOFSEND got EOF after %d bytes sha256 %s" %
                (peer, count, digest))
            conn.sendall(("%d %s\n" % (count, digest)).encode())
            sent, digest = send_stream(conn, seed, n)
            log("target: %s EOFSEND replied %d bytes sha256 %s" %
                (peer, sent, digest))
            conn.close()
        else:
            log("target: %s bad request %r" % (peer, req))
            conn.close()
    except Exception as e:  # one connection's failure is logged, not fatal
        log("target: %s error %s (%s)" % (peer, errname(e), e))
        conn.close()


def cmd_serve(args):
    socks = []
    for b in args.bind:
        fam = socket.AF_INET6 if ":" in b else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        if args.rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.rcvbuf)
        s.bind((b, args.port))
        s.listen(1024)
        socks.append(s)
        log("target: listening on [%s]:%d" % (b, args.port))

    def accept_loop(s):
        while True:
            conn, peer = s.accept()
            p = "[%s]:%d" % (peer[0], peer[1])
            threading.Thread(target=serve_one, args=(conn, p, args),
                             daemon=True).start()

    for s in socks[1:]:
        threading.Thread(target=accept_loop, args=(s,), daemon=True).start()
    accept_loop(socks[0])


# ---- apps -----------------------------------------------------------------

def connect(host, port, timeout, mss=0):
    """A connected socket; with <mss>, TCP_MAXSEG is set before connect,
    so the SYN announces at most <mss> (as a host with a smaller MTU
    would)."""
    if not mss:
        return socket.create_connection((host, port), timeout=timeout)
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    c = socket.socket(fam, socket.SOCK_STREAM)
    try:
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
        c.settimeout(timeout)
        c.connect((host, port))
    except OSError:
        c.close()
        raise
    return c


def mss_line(c, tag):
    """Log the MSS this connection announced in its SYN (tcpi_advmss) and
    the one it sends with (tcpi_snd_mss), from struct tcp_info."""
    ti = c.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 104)
    snd_mss = int.from_bytes(ti[16:20], sys.byteorder)
    advmss = int.from_bytes(ti[84:88], sys.byteorder)
    log("%s: mss announced %d, sending %d" % (tag, advmss, snd_mss))


def do_send(host, port, nbytes, seed, rate=0, timeout=30, progress=None,
            tag="send", mss=None):
    """Upload <nbytes> of stream <seed> to SINK; returns (ok, message)."""
    t0 = time.monotonic()
    try:
        c = connect(host, port, timeout, mss)
        if mss is not None:
            mss_line(c, tag)
        c.sendall(b"SINK\n")
        sent, digest = send_stream(c, seed, nbytes, rate, progress)
        c.shutdown(socket.SHUT_WR)
        reply = b""
        while not reply.endswith(b"\n"):
            b = c.recv(256)
            if not b:
                break
            reply += b
        c.close()
    except (OSError, ConnectionError) as e:
        return 2, "%s: connection error %s after %.2fs (%s)" % (
            tag, errname(e), time.monotonic() - t0, e)
    dt = time.monotonic() - t0
    parts = reply.decode(errors="replace").split()
    if len(parts) != 2:
        return 1, "%s: bad or missing reply from target: %r" % (tag, reply)
    if int(parts[0]) != sent or parts[1] != digest:
        return 1, "%s: MISMATCH sent %d sha256 %s, target got %s sha256 %s" % (
            tag, sent, digest, parts[0], parts[1])
    return 0, "%s: %d bytes sha256 %s match, %.2fs, %.1f Mbit/s" % (
        tag, sent, digest, dt, sent * 8 / dt / 1e6 if dt > 0 else 0)


class StreamCheck:
    """Compares received bytes with stream <seed> as they arrive, so even
    gigabytes need no precomputed hash: a wrong byte is caught (and its
    offset reported) at once.  Both sides' SHA-256 are kept for the log."""

    def __init__(self, seed, n):
        self.gen = stream(seed, n)
        self.pending = b""
        self.got = 0
        self.bad_at = None
        self.h = hashlib.sha256()

    def feed(self, b):
        self.h.update(b)
        off = 0
        while off < len(b):
            if not self.pending:
                self.pending = next(self.gen, b"")
                if not self.pending:  # more bytes than the stream holds
                    if self.bad_at is None:
                        self.bad_at = self.got + off
                    break
            k = min(len(self.pending), len(b) - off)
            if self.bad_at is None and b[off:off + k] != self.pending[:k]:
                i = next(j for j in range(k) if b[off + j] != self.pending[j])
                self.bad_at = self.got + off + i
            self.pending = self.pending[k:]
            off += k
        self.got += len(b)


def do_recv(host, port, nbytes, seed, rate=0, timeout=30, progress=None,
            tag="recv", mss=None):
    """Download <nbytes> of stream <seed> via SEND; returns (ok, message)."""
    t0 = time.monotonic()
    chk = StreamCheck(seed, nbytes)
    try:
        c = connect(host, port, timeout, mss)
        if mss is not None:
            mss_line(c, tag)
        c.sendall(("SEND %d %d %d\n" % (nbytes, seed, rate)).encode())
        while True:
            b = c.recv(CHUNK)
            if not b:
                break
            chk.feed(b)
            if progress:
                progress(chk.got)
        c.close()
    except (OSError, ConnectionError) as e:
        return 2, "%s: connection error %s after %d bytes, %.2fs (%s)" % (
            tag, errname(e), chk.got, time.monotonic() - t0, e)
    dt = time.monotonic() - t0
    digest = chk.h.hexdigest()
    if chk.bad_at is not None:
        return 1, "%s: MISMATCH first wrong byte at offset %d (got %d bytes, " \
            "sha256 %s)" % (tag, chk.bad_at, chk.got, digest)
    if chk.got != nbytes:
        return 1, "%s: SHORT got %d of %d bytes, then a clean EOF " \
            "(sha256 of what came %s)" % (tag, chk.got, nbytes, digest)
    return 0, "%s: %d bytes match the stream byte for byte, sha256 %s, " \
        "%.2fs, %.1f Mbit/s" % (tag, chk.got, digest, dt,
                                chk.got * 8 / dt / 1e6 if dt > 0 else 0)


def progress_writer(path):
    if not path:
        return None
    state = {"last": 0.0}

    def cb(n):
        now = time.monotonic()
        if now - state["last"] >= 0.2:
            state["last"] = now
            with open(path + ".tmp", "w") as f:
                f.write("%d\n" % n)
            os.replace(path + ".tmp", path)
    return cb


def cmd_send(args):
    rc, msg = do_send(args.host, args.port, parse_size(args.bytes), args.seed,
                      parse_size(args.rate), args.timeout,
                      progress_writer(args.progress), mss=args.mss)
    log(msg)
    return rc


def cmd_recv(args):
    rc, msg = do_recv(args.host, args.port, parse_size(args.bytes), args.seed,
                      parse_size(args.rate), args.timeout,
                      progress_writer(args.progress), mss=args.mss)
    log(msg)
    return rc


def cmd_halfclose(args):
    """Request, shutdown(SHUT_WR), then the full reply must still arrive."""
    req_n, rep_n = parse_size(args.req_bytes), parse_size(args.reply_bytes)
    expect_rep = stream_hash(args.seed + 1, rep_n)
    t0 = time.monotonic()
    try:
        c = connect(args.host, args.port, args.timeout)
        c.sendall(("EOFSEND %d %d\n" % (rep_n, args.seed + 1)).encode())
        sent, req_digest = send_stream(c, args.seed, req_n)
        c.shutdown(socket.SHUT_WR)
        log("halfclose: sent %d bytes then shutdown(SHUT_WR)" % sent)
        data = b""
        while b"\n" not in data:
            b = c.recv(4096)
            if not b:
                break
            data += b
        line, _, rest = data.partition(b"\n")
        h = hashlib.sha256(rest)
        got = len(rest)
        while True:
            b = c.recv(CHUNK)
            if not b:
                break
            h.update(b)
            got += len(b)
        c.close()
    except (OSError, ConnectionError) as e:
        log("halfclose: connection error %s after %.2fs (%s)" %
            (errname(e), time.monotonic() - t0, e))
        return 2
    parts = line.decode(errors="replace").split()
    if len(parts) != 2 or int(parts[0]) != sent or parts[1] != req_digest:
        log("halfclose: MISMATCH target saw %r, app sent %d sha256 %s" %
            (line, sent, req_digest))
        return 1
    if got != rep_n or h.hexdigest() != expect_rep:
        log("halfclose: MISMATCH reply %d bytes sha256 %s, expected %d sha256 %s"
            % (got, h.hexdigest(), rep_n, expect_rep))
        return 1
    log("halfclose: target got the request (%d bytes, sha256 match) and its "
        "%d-byte reply arrived intact after our FIN (sha256 %s), %.2fs" %
        (sent, got, expect_rep, time.monotonic() - t0))
    return 0


def cmd_multi(args):
    """<conns> connections at once, alternating upload and download."""
    n, size = args.conns, parse_size(args.bytes)
    seeds = [args.seed + i for i in range(n)]
    expect = {}
    for i in range(1, n, 2):
        expect[i] = stream_hash(seeds[i], size)
    barrier = threading.Barrier(n)
    results = [None] * n
    conns = [None] * n

    def worker(i):
        try:
            c = connect(args.host, args.port, args.timeout)
            c.settimeout(args.timeout)
            conns[i] = c
        except OSError as e:
            results[i] = (2, "conn %d: connect error %s" % (i, errname(e)))
            barrier.abort()
            return
        try:
            # Every connection is open before any data moves.
            barrier.wait(timeout=args.timeout)
        except threading.BrokenBarrierError:
            results[i] = (2, "conn %d: another connection failed" % i)
            c.close()
            return
        h = hashlib.sha256()
        got = 0
        try:
            if i % 2 == 0:
                c.sendall(b"SINK\n")
                sent, digest = send_stream(c, seeds[i], size)
                c.shutdown(socket.SHUT_WR)
                reply = b""
                while not reply.endswith(b"\n"):
                    b = c.recv(256)
                    if not b:
                        break
                    reply += b
                ok = reply.decode().split() == [str(sent), digest]
                results[i] = (0 if ok else 1, "conn %d up: %s vs %r" %
                              (i, digest, reply))
            else:
                c.sendall(("SEND %d %d 0\n" % (size, seeds[i])).encode())
                while True:
                    b = c.recv(CHUNK)
                    if not b:
                        break
                    h.update(b)
                    got += len(b)
                ok = got == size and h.hexdigest() == expect[i]
                results[i] = (0 if ok else 1, "conn %d down: %d bytes %s" %
                              (i, got, h.hexdigest()))
        except OSError as e:
            results[i] = (2, "conn %d: error %s after %d bytes" %
                          (i, errname(e), got))
        finally:
            c.close()

    t0 = time.monotonic()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.monotonic() - t0
    bad = [r for r in results if r is None or r[0] != 0]
    for r in bad[:20]:
        log("multi: FAILED %s" % (r[1] if r else "no result"))
    log("multi: %d/%d connections intact (%d up, %d down, %d bytes each), "
        "%.2fs" % (n - len(bad), n, (n + 1) // 2, n // 2, size, dt))
    return 0 if not bad else 1


def cmd_refused(args):
    """The connection to a closed port must fail (reset) within --within s."""
    t0 = time.monotonic()
    how = None
    try:
        c = connect(args.host, args.port, args.within + 3)
        c.settimeout(args.within + 3)
        # The client may complete the app's handshake at once; the reset then
        # arrives once the server reports the refused target.
        try:
            c.sendall(b"hello\n")
        except OSError as e:
            how = e
        if how is None:
            b = c.recv(4096)
            how = "EOF" if not b else "data %r" % b[:40]
        c.close()
    except OSError as e:
        how = e
    dt = time.monotonic() - t0
    if isinstance(how, OSError) and not isinstance(how, socket.timeout):
        name = errname(how)
        if name in ("ECONNRESET", "ECONNREFUSED", "EPIPE") and dt <= args.within:
            log("refused: %s after %.3fs (limit %.1fs)" % (name, dt, args.within))
            return 0
        log("refused: %s after %.3fs, want reset within %.1fs" %
            (name, dt, args.within))
        return 1
    log("refused: got %s after %.3fs, want a reset within %.1fs" %
        (errname(how) if isinstance(how, OSError) else how, dt, args.within))
    return 1


def cmd_probe(args):
    """Exit 0 when a TCP connection to host:port can be established."""
    try:
        c = connect(args.host, args.port, args.timeout)
        c.close()
        log("probe: connected to %s:%d" % (args.host, args.port))
        return 0
    except OSError as e:
        log("probe: %s:%d unreachable (%s)" % (args.host, args.port, errname(e)))
        return 1


def cmd_hash(args):
    log(stream_hash(args.seed, parse_size(args.bytes)))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    s = sub.add_parser("serve", help="target server")
    s.add_argument("--bind", action="append", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--slow-rate", type=parse_size, default=0,
                   help="SINK reads at this many bytes/s ...")
    s.add_argument("--slow-secs", type=float, default=None,
                   help="... for this many seconds, then at full speed")
    s.add_argument("--rcvbuf", type=parse_size, default=0)
    s.set_defaults(fn=cmd_serve)

    def app(name, fn):
        a = sub.add_parser(name)
        a.add_argument("--host", required=True)
        a.add_argument("--port", type=int, required=True)
        a.add_argument("--seed", type=int, default=1)
        a.add_argument("--timeout", type=float, default=30)
        a.set_defaults(fn=fn)
        return a

    for name, fn in (("send", cmd_send), ("recv", cmd_recv)):
        a = app(name, fn)
        a.add_argument("--bytes", required=True)
        a.add_argument("--rate", default="0")
        a.add_argument("--progress", help="file updated with bytes so far")
        a.add_argument("--mss", type=int, default=None,
                       help="TCP_MAXSEG before connect (0: the route's), "
                       "and log the MSS announced and sent with")
    a = app("halfclose", cmd_halfclose)
    a.add_argument("--req-bytes", default="64k")
    a.add_argument("--reply-bytes", default="1m")
    a = app("multi", cmd_multi)
    a.add_argument("--conns", type=int, default=200)
    a.add_argument("--bytes", default="1m")
    a = app("refused", cmd_refused)
    a.add_argument("--within", type=float, default=2.0)
    a = app("probe", cmd_probe)
    h = sub.add_parser("hash")
    h.add_argument("--seed", type=int, default=1)
    h.add_argument("--bytes", required=True)
    h.set_defaults(fn=cmd_hash)

    args = p.parse_args()
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
