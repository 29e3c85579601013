#!/usr/bin/env python3
"""A tiny DNS server over TCP, TLS (DoT) and HTTPS (DoH, HTTP/1.1 POST,
keep-alive) for the netns tests.  Answers A queries for the names given
as NAME=ADDR (TTL 300), NXDOMAIN for the rest, and misbehaves on purpose
for some names:

  trunc.*  the length prefix (or Content-Length) promises more bytes than
           come, then the connection closes
  big.*    a length (Content-Length) past any DNS message: 65535 / 70000
  long.*   A 10.55.9.1 and 40 additional records (over 512 bytes)
  huge.*   60 A records 10.55.8.N in the answer (over 512 bytes)
  slow*    no answer: the connection's thread sleeps 30 s
  wrong.*  a well-formed answer, with the query's id, to another question
           (evil.test A 10.99.99.99): a cache poisoning attempt

Each query is logged as "PROTO PEER NAME" on stdout (flushed), each
connection as "conn PEER PROTO".  Runs
until killed; every connection ends after 60 s idle."""
import argparse
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time

RECORDS = {}
LOCK = threading.Lock()


def log(proto, peer, name):
    with LOCK:
        print(f"{proto} {peer} {name}", flush=True)


def qname(msg):
    """The question's name (lower case, dotted) and the offset past
    QTYPE/QCLASS."""
    i, labels = 12, []
    while msg[i] != 0:
        n = msg[i]
        labels.append(msg[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    return ".".join(labels).lower(), i + 5


def answer(msg):
    name, end = qname(msg)
    if name.startswith("wrong."):
        evil = b"\4evil\4test\0\0\1\0\1"
        rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + \
            socket.inet_aton("10.99.99.99")
        return name, msg[:2] + struct.pack("!HHHHH", 0x8180, 1, 1, 0, 0) + \
            evil + rr
    qtype = struct.unpack("!H", msg[end - 4:end - 2])[0]
    ident = msg[:2]
    addr = RECORDS.get(name)
    question = msg[12:end]

    def a_rr(ip):
        return b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + \
            socket.inet_aton(ip)
    if name.startswith("long."):
        return name, ident + struct.pack("!HHHHH", 0x8180, 1, 1, 0, 40) + \
            question + a_rr("10.55.9.1") + \
            b"".join(a_rr(f"10.55.9.{i + 2}") for i in range(40))
    if name.startswith("huge."):
        return name, ident + struct.pack("!HHHHH", 0x8180, 1, 60, 0, 0) + \
            question + b"".join(a_rr(f"10.55.8.{i + 1}") for i in range(60))
    if addr is not None and qtype == 1:
        rr = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 300, 4) + \
            socket.inet_aton(addr)
        return name, ident + struct.pack("!HHHHH", 0x8180, 1, 1, 0, 0) + \
            question + rr
    rcode = 0 if addr is not None else 3
    return name, ident + struct.pack("!HHHHH", 0x8180 | rcode, 1, 0, 0, 0) + \
        question


def recv_exact(f, n):
    b = f.read(n)
    if b is None or len(b) < n:
        raise EOFError
    return b


class Stream(socketserver.StreamRequestHandler):
    proto = "tcp"

    def handle(self):
        self.request.settimeout(60)
        peer = self.client_address[0]
        log("conn", peer, self.proto)
        try:
            if self.proto == "https":
                self.http(peer)
            else:
                self.dns(peer)
        except (EOFError, OSError, ssl.SSLError, ValueError):
            pass

    def dns(self, peer):
        while True:
            n = struct.unpack("!H", recv_exact(self.rfile, 2))[0]
            msg = recv_exact(self.rfile, n)
            name, reply = answer(msg)
            log(self.proto, peer, name)
            if name.startswith("slow"):
                time.sleep(30)
                return
            if name.startswith("trunc."):
                self.wfile.write(struct.pack("!H", 64) + reply[:10])
                self.wfile.flush()
                return
            if name.startswith("big."):
                self.wfile.write(struct.pack("!H", 65535) + reply)
                self.wfile.flush()
                return
            self.wfile.write(struct.pack("!H", len(reply)) + reply)
            self.wfile.flush()

    def http(self, peer):
        while True:
            line = self.rfile.readline(4096)
            if not line:
                return
            clen = None
            while True:
                h = self.rfile.readline(4096)
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.decode("latin-1").partition(":")
                if k.strip().lower() == "content-length":
                    clen = int(v.strip())
            if not line.startswith(b"POST ") or clen is None:
                self.wfile.write(b"HTTP/1.1 400 Bad Request\r\n"
                                 b"Content-Length: 0\r\n\r\n")
                self.wfile.flush()
                return
            msg = recv_exact(self.rfile, clen)
            name, reply = answer(msg)
            log("https", peer, name)
            head = "HTTP/1.1 200 OK\r\nContent-Type: application/dns-message\r\n"
            if name.startswith("trunc."):
                self.wfile.write((head + "Content-Length: 64\r\n\r\n").encode()
                                 + reply[:10])
                self.wfile.flush()
                return
            if name.startswith("big."):
                self.wfile.write((head + "Content-Length: 70000\r\n\r\n")
                                 .encode() + reply)
                self.wfile.flush()
                return
            self.wfile.write((head + f"Content-Length: {len(reply)}\r\n\r\n")
                             .encode() + reply)
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, ctx):
        self.ctx = ctx
        super().__init__(addr, handler)

    def get_request(self):
        sock, addr = super().get_request()
        if self.ctx is not None:
            sock.settimeout(10)
            sock = self.ctx.wrap_socket(sock, server_side=True)
            sock.settimeout(None)
        return sock, addr

    def handle_error(self, request, client_address):
        pass


def serve(bind, port, proto, ctx):
    handler = type(f"H{proto}", (Stream,), {"proto": proto})
    srv = Server((bind, port), handler, ctx)
    threading.Thread(target=srv.serve_forever, daemon=True).start()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bind", required=True)
    p.add_argument("--tcp", type=int)
    p.add_argument("--tls", type=int)
    p.add_argument("--https", type=int)
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("records", nargs="*")
    a = p.parse_args()
    for r in a.records:
        k, _, v = r.partition("=")
        RECORDS[k.lower()] = v
    ctx = None
    if a.tls or a.https:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.cert, a.key)
    if a.tcp:
        serve(a.bind, a.tcp, "tcp", None)
    if a.tls:
        serve(a.bind, a.tls, "tls", ctx)
    if a.https:
        serve(a.bind, a.https, "https", ctx)
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    sys.exit(main())
