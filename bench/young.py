#!/usr/bin/env python3
"""Whole transfers timed from connect to last byte (bench/young.sh).

young.py serve ADDR PORT      the target: on PORT a client gets SIZE bytes
                              sent to it (it names SIZE in an 8-byte
                              header, "down"), on PORT+1 the target reads
                              until EOF and answers with the byte count
                              ("up").
young.py run ADDR PORT SIZE   one download and one upload of SIZE bytes at
                              once, each on its own connection; prints one
                              JSON line: seconds from connect() to the last
                              byte (down: the last byte received; up: the
                              target's count of all bytes, so every byte
                              was delivered) and Mbit/s of each.
"""
import json
import socket
import struct
import sys
import threading
import time

CHUNK = 65536
BLOCK = bytes(range(256)) * (CHUNK // 256)


def serve_down(c):
    with c:
        hdr = b""
        while len(hdr) < 8:
            b = c.recv(8 - len(hdr))
            if not b:
                return
            hdr += b
        left = struct.unpack("!Q", hdr)[0]
        while left > 0:
            n = c.send(BLOCK[:min(left, CHUNK)])
            left -= n
        c.shutdown(socket.SHUT_WR)
        while c.recv(CHUNK):
            pass


def serve_up(c):
    with c:
        total = 0
        while True:
            b = c.recv(CHUNK)
            if not b:
                break
            total += len(b)
        c.sendall(struct.pack("!Q", total))


def listener(addr, port, fn):
    s = socket.create_server((addr, port), reuse_port=False, backlog=64)
    while True:
        c, _ = s.accept()
        threading.Thread(target=fn, args=(c,), daemon=True).start()


def serve(addr, port):
    threading.Thread(target=listener, args=(addr, port + 1, serve_up),
                     daemon=True).start()
    listener(addr, port, serve_down)


def down(addr, port, size, out):
    t0 = time.monotonic()
    c = socket.create_connection((addr, port), timeout=300)
    c.sendall(struct.pack("!Q", size))
    got = 0
    while got < size:
        b = c.recv(1 << 20)
        if not b:
            break
        got += len(b)
    t1 = time.monotonic()
    c.close()
    out["down"] = (t1 - t0, got)


def up(addr, port, size, out):
    t0 = time.monotonic()
    c = socket.create_connection((addr, port + 1), timeout=300)
    left = size
    while left > 0:
        left -= c.send(BLOCK[:min(left, CHUNK)])
    c.shutdown(socket.SHUT_WR)
    hdr = b""
    while len(hdr) < 8:
        b = c.recv(8 - len(hdr))
        if not b:
            break
        hdr += b
    t1 = time.monotonic()
    c.close()
    got = struct.unpack("!Q", hdr)[0] if len(hdr) == 8 else 0
    out["up"] = (t1 - t0, got)


def run(addr, port, size):
    out = {}
    ts = [threading.Thread(target=f, args=(addr, port, size, out))
          for f in (down, up)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    res = {}
    for d in ("down", "up"):
        secs, got = out.get(d, (0, 0))
        ok = got == size
        res[d + "_s"] = round(secs, 3)
        res[d + "_mbit"] = round(size * 8 / secs / 1e6, 2) if ok else 0
        res[d + "_ok"] = ok
    print(json.dumps(res))
    return 0 if res["down_ok"] and res["up_ok"] else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) == 5 and sys.argv[1] == "run":
        sys.exit(run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
    else:
        sys.exit(__doc__)
