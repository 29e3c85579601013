#!/usr/bin/env python3
"""Both ends of e2e_sniff.sh: targets that need a domain found (TLS with a
given SNI, HTTP with a Host header) and one that speaks first (a banner,
as SSH and SMTP do), and the app side that checks the bytes by hash and
the time to the first byte.

  sniffpeer.py serve --bind A --tls-port P --http-port P --banner-port P
                     --cert F --key F
  sniffpeer.py tls    --host A --port P --sni NAME --bytes N [--status CMD]
  sniffpeer.py http   --host A --port P --hostname NAME --bytes N
  sniffpeer.py banner --host A --port P --max-ms MS

The payload of N bytes is SHAKE-256 of the name; the app compares its
SHA-256 with the one it computes itself.  With --status the app runs CMD
(tunsplit status --json --flows) while its connection is still open and
prints the flow list's domains.
"""
import argparse
import hashlib
import json
import socket
import ssl
import subprocess
import sys
import threading
import time


def payload(name, n):
    return hashlib.shake_256(name.encode()).digest(n)


def read_line(f):
    line = f.readline(4096)
    return line.decode("latin-1").strip()


def serve_tls(conn, ctx):
    with ctx.wrap_socket(conn, server_side=True) as s:
        f = s.makefile("rb")
        name, n = read_line(f).split()
        s.sendall(payload(name, int(n)))
        s.recv(1)       # the app closes when it is done


def serve_http(conn):
    with conn:
        f = conn.makefile("rb")
        path = read_line(f).split()[1]
        host = None
        while True:
            h = read_line(f)
            if not h:
                break
            k, _, v = h.partition(":")
            if k.lower() == "host":
                host = v.strip()
        n = int(path.strip("/"))
        body = payload((host or "").split(":")[0], n)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n"
                     b"Connection: close\r\n\r\n" % n + body)


def serve_banner(conn):
    with conn:
        conn.sendall(b"220 banner.example ESMTP ready\r\n")
        f = conn.makefile("rb")
        line = read_line(f)
        conn.sendall(("250 " + line + "\r\n").encode())


def serve(a):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(a.cert, a.key)
    socks = []
    for port, kind in ((a.tls_port, "tls"), (a.http_port, "http"),
                       (a.banner_port, "banner")):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((a.bind, port))
        s.listen(64)
        socks.append((s, kind))

    def loop(s, kind):
        while True:
            c, _ = s.accept()
            fn = {"tls": lambda c: serve_tls(c, ctx), "http": serve_http,
                  "banner": serve_banner}[kind]
            threading.Thread(target=guard, args=(fn, c), daemon=True).start()

    for s, kind in socks:
        threading.Thread(target=loop, args=(s, kind), daemon=True).start()
    print("serving", flush=True)
    while True:
        time.sleep(3600)


def guard(fn, c):
    try:
        fn(c)
    except Exception as e:      # one bad client never stops the server
        print("serve error:", e, flush=True)


def recv_all(s, n):
    buf = bytearray()
    while len(buf) < n:
        b = s.recv(min(65536, n - len(buf)))
        if not b:
            break
        buf += b
    return bytes(buf)


def check(name, got, n, t0, t_first):
    want = hashlib.sha256(payload(name, n)).hexdigest()
    have = hashlib.sha256(got).hexdigest()
    if len(got) != n or have != want:
        print("FAIL: %s: %d of %d bytes, sha256 %s, want %s" %
              (name, len(got), n, have, want))
        sys.exit(1)
    print("ok: %s: %d bytes, sha256 %s, first byte after %.1f ms" %
          (name, n, have[:16], (t_first - t0) * 1000))


def app_tls(a):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    t0 = time.monotonic()
    raw = socket.create_connection((a.host, a.port), timeout=20)
    with ctx.wrap_socket(raw, server_hostname=a.sni) as s:
        s.sendall(("%s %d\n" % (a.sni, a.bytes)).encode())
        first = s.recv(1)
        t1 = time.monotonic()
        got = first + recv_all(s, a.bytes - 1)
        if a.status:
            out = subprocess.run(a.status, shell=True, capture_output=True,
                                 timeout=20).stdout
            j = json.loads(out)
            print("flows:", json.dumps([(f["dst"], f.get("domain"))
                                        for f in j.get("flow_list", [])]))
    check(a.sni, got, a.bytes, t0, t1)


def app_http(a):
    t0 = time.monotonic()
    with socket.create_connection((a.host, a.port), timeout=20) as s:
        s.sendall(("GET /%d HTTP/1.1\r\nUser-Agent: sniffpeer\r\n"
                   "Host: %s\r\nAccept: */*\r\n\r\n" %
                   (a.bytes, a.hostname)).encode())
        f = s.makefile("rb")
        status = f.readline()
        t1 = time.monotonic()
        while f.readline() not in (b"\r\n", b""):
            pass
        got = f.read(a.bytes)
    if not status.startswith(b"HTTP/1.1 200"):
        print("FAIL: http status", status)
        sys.exit(1)
    check(a.hostname.split(":")[0], got, a.bytes, t0, t1)


def app_banner(a):
    t0 = time.monotonic()
    with socket.create_connection((a.host, a.port), timeout=20) as s:
        f = s.makefile("rb")
        line = f.readline()
        t1 = time.monotonic()
        s.sendall(b"EHLO app.example\r\n")
        echo = f.readline()
    ms = (t1 - t0) * 1000
    if not line.startswith(b"220 banner") or echo != b"250 EHLO app.example\r\n":
        print("FAIL: banner %r, echo %r" % (line, echo))
        sys.exit(1)
    print("ok: banner after %.1f ms (bound %d ms)" % (ms, a.max_ms))
    if ms > a.max_ms:
        print("FAIL: the banner took %.1f ms, more than %d" % (ms, a.max_ms))
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--bind", required=True)
    for k in ("tls", "http", "banner"):
        s.add_argument("--%s-port" % k, type=int, required=True)
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    for k in ("tls", "http", "banner"):
        p = sub.add_parser(k)
        p.add_argument("--host", required=True)
        p.add_argument("--port", type=int, required=True)
        if k == "tls":
            p.add_argument("--sni", required=True)
            p.add_argument("--status")
        if k == "http":
            p.add_argument("--hostname", required=True)
        if k != "banner":
            p.add_argument("--bytes", type=int, required=True)
        else:
            p.add_argument("--max-ms", type=int, required=True)
    a = ap.parse_args()
    {"serve": serve, "tls": app_tls, "http": app_http,
     "banner": app_banner}[a.cmd](a)


if __name__ == "__main__":
    main()
