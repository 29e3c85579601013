#!/usr/bin/env python3
"""Traffic that spans an event (a SIGHUP) for the tunsplit namespace tests.
Standard library plus tools.py (same directory); talks to tools.py serve
(TCP) and udptool.py serve (UDP echo, "WHOAMI").

  spantool.py --host H [--host H2] --port P --conns N --bytes B --rate R
              [--udp-host H ...] [--udp-port 7] [--udp N]
              --ready FILE --mark FILE [--seed S] [--timeout T]

  1. Opens --conns TCP connections at once, alternating over the --host
     addresses, even ones uploading and odd ones downloading --bytes of
     tools.py's stream (seed S+i), paced to --rate bytes/s each way, and
     --udp UDP sockets over the --udp-host addresses, each of which asks
     the echo server WHOAMI (the address it sees: the association's mapped
     address) and has a random datagram echoed.
  2. Once every connection has moved data and every UDP socket has its
     answers, writes --ready and waits for --mark to appear (the test
     writes it once the event is over).
  3. Every UDP socket then asks WHOAMI again -- the answer must be the same
     mapped address, so the association lived on rather than being made
     anew -- and has another datagram echoed.  Every TCP connection must
     complete with its SHA-256 (a download's against the stream, an
     upload's against the target's reply) and must end *after* --mark was
     seen: a flow that finished before the event proves nothing, and the
     run fails rather than pass on it.

Exit status 0 all intact and spanning, 1 otherwise (each failure printed).
"""

import argparse
import hashlib
import os
import random
import select
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tools  # noqa: E402


def log(*a):
    print("span:", *a, flush=True)


def tcp_worker(i, host, args, started, res):
    seed = args.seed + i
    up = i % 2 == 0
    what = "conn %d %s [%s]" % (i, "up" if up else "down", host)
    got = 0
    try:
        c = socket.create_connection((host, args.port), timeout=args.timeout)
        c.settimeout(args.timeout)
    except OSError as e:
        res[i] = (False, "%s: connect: %s" % (what, tools.errname(e)), 0)
        started.release()
        return
    first = [True]
    moved = [0]

    def progress(n):
        moved[0] = n
        if first[0]:
            first[0] = False
            started.release()
    try:
        if up:
            c.sendall(b"SINK\n")
            sent, digest = tools.send_stream(c, seed, args.bytes, args.rate,
                                             progress)
            c.shutdown(socket.SHUT_WR)
            reply = b""
            while not reply.endswith(b"\n"):
                b = c.recv(256)
                if not b:
                    break
                reply += b
            ok = reply.decode(errors="replace").split() == [str(sent), digest]
            msg = "%s: sent %d sha256 %s, target says %r" % (
                what, sent, digest[:16], reply.decode(errors="replace").strip())
            got = sent
        else:
            c.sendall(b"SEND %d %d %d\n" % (args.bytes, seed, args.rate))
            h = hashlib.sha256()
            while True:
                b = c.recv(1 << 16)
                if not b:
                    break
                h.update(b)
                got += len(b)
                progress(got)
            ok = got == args.bytes and \
                h.hexdigest() == tools.stream_hash(seed, args.bytes)
            msg = "%s: got %d bytes sha256 %s" % (what, got, h.hexdigest()[:16])
    except OSError as e:
        ok, msg = False, "%s: %s after %d bytes" % (what, tools.errname(e),
                                                    moved[0])
    finally:
        c.close()
        if first[0]:
            started.release()
    res[i] = (ok, msg, time.monotonic())


def ask(sock, dest, payload, match, timeout=3, tries=3):
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
                return data
    return None


def udp_round(socks, dests, rng, tag):
    """WHOAMI and one echo on every socket; returns the mapped addresses
    (None where no answer came) and the failures."""
    mapped, bad = [], []
    for k, (s, dest) in enumerate(zip(socks, dests)):
        who = ask(s, dest, b"WHOAMI", lambda d: d.startswith(b"ADDR "))
        mapped.append(who.decode() if who else None)
        if who is None:
            bad.append("udp %d %s: no WHOAMI answer %s" % (k, dest, tag))
            continue
        data = rng.randbytes(rng.randrange(1, 1400))
        if ask(s, dest, data, lambda d, x=data: d == x) is None:
            bad.append("udp %d %s: %d bytes not echoed intact %s" %
                       (k, dest, len(data), tag))
    return mapped, bad


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--host", action="append", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--conns", type=int, default=60)
    p.add_argument("--bytes", type=tools.parse_size, default="512k")
    p.add_argument("--rate", type=tools.parse_size, default="128k")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--udp-host", action="append", default=[])
    p.add_argument("--udp-port", type=int, default=7)
    p.add_argument("--udp", type=int, default=0)
    p.add_argument("--ready", required=True)
    p.add_argument("--mark", required=True)
    p.add_argument("--timeout", type=float, default=60)
    args = p.parse_args()

    t0 = time.monotonic()
    started = threading.Semaphore(0)
    res = [None] * args.conns
    threads = [threading.Thread(target=tcp_worker, daemon=True, args=(
        i, args.host[i % len(args.host)], args, started, res))
        for i in range(args.conns)]
    for t in threads:
        t.start()
    rng = random.Random(args.seed)
    socks, dests = [], []
    for k in range(args.udp):
        h = args.udp_host[k % len(args.udp_host)]
        socks.append(socket.socket(socket.AF_INET6 if ":" in h else
                                   socket.AF_INET, socket.SOCK_DGRAM))
        dests.append((h, args.udp_port))
    before, bad = udp_round(socks, dests, rng, "before the event")
    for _ in range(args.conns):
        if not started.acquire(timeout=args.timeout):
            bad.append("not every connection moved data within %.0f s" %
                       args.timeout)
            break
    early = [r for r in res if r is not None]
    if early:
        bad.append("%d connections ended before the event (first: %s)" % (
            len(early), early[0][1]))
    if bad:
        for b in bad:
            log("FAILED", b)
        return 1
    with open(args.ready + ".tmp", "w") as f:
        f.write("%d connections moving, %d UDP associations\n" % (
            args.conns, args.udp))
    os.rename(args.ready + ".tmp", args.ready)
    log("ready after %.1f s: %d connections moving, %d UDP associations "
        "answered" % (time.monotonic() - t0, args.conns, args.udp))

    end = time.monotonic() + args.timeout
    while not os.path.exists(args.mark):
        if time.monotonic() > end:
            log("FAILED: no %s within %.0f s" % (args.mark, args.timeout))
            return 1
        time.sleep(0.05)
    mark = time.monotonic()

    after, bad = udp_round(socks, dests, rng, "after the event")
    for k, (a, b) in enumerate(zip(before, after)):
        if b is not None and a != b:
            bad.append("udp %d %s: mapped %s before, %s after: a new "
                       "association" % (k, dests[k], a, b))
    for t in threads:
        t.join(args.timeout)
    for i, r in enumerate(res):
        if r is None:
            bad.append("conn %d: no result within %.0f s" % (i, args.timeout))
        elif not r[0]:
            bad.append(r[1])
        elif r[2] <= mark:
            bad.append("%s: ended before the event" % r[1])
    for b in bad[:30]:
        log("FAILED", b)
    log("%d/%d connections intact (%d bytes each way, %d B/s), ending "
        "%.1f-%.1f s after the event; %d/%d UDP associations kept their "
        "mapped address and echoed intact; %.1f s" % (
            sum(1 for r in res if r and r[0]), args.conns, args.bytes,
            args.rate,
            min((r[2] - mark for r in res if r and r[0]), default=0),
            max((r[2] - mark for r in res if r and r[0]), default=0),
            sum(1 for a, b in zip(before, after) if a and a == b),
            args.udp, time.monotonic() - t0))
    return 0 if not bad else 1


if __name__ == "__main__":
    sys.exit(main())
