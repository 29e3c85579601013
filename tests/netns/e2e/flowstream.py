#!/usr/bin/env python3
"""A stream of short flows for the group tests (e2e_groups*.sh).

flowstream.py HOST PORT OUT [--secs S] [--count N] [--gap G] [--timeout T]

One flow at a time to tools.py serve at HOST:PORT: each asks for 64 KiB
(seed 7) and checks its SHA-256.  A line per flow in OUT, "T ok|fail
GOT END" or "T fail ERROR", T and END its start and end in seconds
(CLOCK_REALTIME, as date +%s.%N).  Stops after S seconds or N flows, or
once OUT.stop exists; a flow starts G seconds after the one before it
started (or at once, if that one took longer).  T (10 s): the socket
timeout of each flow.
"""
import argparse
import hashlib
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import tools  # noqa: E402

N = 65536


def flow(host, port, want, timeout):
    c = socket.create_connection((host, port), timeout=timeout)
    c.settimeout(timeout)
    c.sendall(b"SEND %d 7 0\n" % N)
    h, got = hashlib.sha256(), 0
    while True:
        b = c.recv(65536)
        if not b:
            break
        h.update(b)
        got += len(b)
    c.close()
    return got, got == N and h.hexdigest() == want


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("out")
    ap.add_argument("--secs", type=float, default=3600)
    ap.add_argument("--count", type=int, default=1 << 30)
    ap.add_argument("--gap", type=float, default=0)
    ap.add_argument("--timeout", type=float, default=10)
    a = ap.parse_args()
    want = tools.stream_hash(7, N)
    end = time.time() + a.secs
    with open(a.out, "w", buffering=1) as f:
        for _ in range(a.count):
            if time.time() >= end or os.path.exists(a.out + ".stop"):
                break
            t = time.time()
            try:
                got, ok = flow(a.host, a.port, want, a.timeout)
                f.write("%.3f %s %d %.3f\n" % (t, "ok" if ok else "fail",
                                              got, time.time()))
            except OSError as e:
                f.write("%.3f fail %s\n" % (t, e.__class__.__name__))
            time.sleep(max(0, a.gap - (time.time() - t)))


if __name__ == "__main__":
    main()
