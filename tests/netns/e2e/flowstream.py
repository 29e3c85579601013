#!/usr/bin/env python3
"""A stream of short flows for the group tests (e2e_groups*.sh).

flowstream.py HOST PORT OUT [--secs S] [--count N] [--gap G] [--timeout T]
              [--parallel P] [--bytes B]

One flow at a time (or a round of P at once) to tools.py serve at
HOST:PORT: each asks for B bytes (64 KiB; seed 7) and checks its
SHA-256.  A line per flow in OUT, "T ok|fail GOT END" or "T fail
ERROR", T and END its start and end in seconds (CLOCK_REALTIME, as
date +%s.%N).  Stops after S seconds or N flows (rounds), or
once OUT.stop exists; a flow starts G seconds after the one before it
started (or at once, if that one took longer); with P, a round G
seconds after the one before it started.  T (10 s): the socket
timeout of each flow.
"""
import argparse
import hashlib
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import tools  # noqa: E402


def flow(host, port, want, timeout, n):
    c = socket.create_connection((host, port), timeout=timeout)
    c.settimeout(timeout)
    c.sendall(b"SEND %d 7 0\n" % n)
    h, got = hashlib.sha256(), 0
    while True:
        b = c.recv(65536)
        if not b:
            break
        h.update(b)
        got += len(b)
    c.close()
    return got, got == n and h.hexdigest() == want


def one(a, want, f, lock):
    t = time.time()
    try:
        got, ok = flow(a.host, a.port, want, a.timeout, a.bytes)
        line = "%.3f %s %d %.3f\n" % (t, "ok" if ok else "fail", got,
                                      time.time())
    except OSError as e:
        line = "%.3f fail %s\n" % (t, e.__class__.__name__)
    with lock:
        f.write(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("host")
    ap.add_argument("port", type=int)
    ap.add_argument("out")
    ap.add_argument("--secs", type=float, default=3600)
    ap.add_argument("--count", type=int, default=1 << 30)
    ap.add_argument("--gap", type=float, default=0)
    ap.add_argument("--timeout", type=float, default=10)
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--bytes", type=tools.parse_size, default=65536)
    a = ap.parse_args()
    want = tools.stream_hash(7, a.bytes)
    lock = threading.Lock()
    end = time.time() + a.secs
    with open(a.out, "w", buffering=1) as f:
        for _ in range(a.count):
            if time.time() >= end or os.path.exists(a.out + ".stop"):
                break
            t = time.time()
            ts = [threading.Thread(target=one, args=(a, want, f, lock))
                  for _ in range(a.parallel)]
            for th in ts:
                th.start()
            for th in ts:
                th.join()
            time.sleep(max(0, a.gap - (time.time() - t)))


if __name__ == "__main__":
    main()
