#!/usr/bin/env python3
"""A stranger at the server's port, for fault_cover_budget.sh and
fault_preauth.sh.  Standard library only.  Every connection comes from
--source (a second address of the client namespace), so the tests can
tell the stranger's source from the real client's.

  cover     N TLS connections that each ask the cover site for a large
            file (an HTTP GET: not a tunsplit header, so the server relays
            it to its cover site) and never read the answer; held until
            the --release file exists.
  preauth   --partial connections that send the first half of a
            ClientHello and nothing more, and --idle connections that
            complete the TLS handshake and send nothing (one of each in
            turn; the handshakes side by side, for at most --timeout);
            held until the --release file exists.

Both write --ready once every connection has been tried, and print one
summary line: how many connected, how many the server refused or closed
(a reset at the accept, a failed handshake, an end of stream), and how
many it still held at the release.
"""

import argparse
import os
import socket
import ssl
import sys
import time


def log(*a):
    print(*a, flush=True)


def connect(args, rcvbuf=0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(args.timeout)
    if rcvbuf:
        # Before the connect, so that the window offered in the handshake
        # is already the small one: shrunk later, the kernel drops what
        # the server sent into the window it offered first, without an
        # ACK, and the server backs off its retransmissions to tens of
        # seconds, in which it cannot learn that this end has closed.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((args.source, 0))
    s.connect((args.server, args.port))
    return s


def client_hello(sni):
    """The bytes of one real ClientHello, from a memory BIO."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return out.read()


def tls_ctx():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def closed(s):
    """True when the server has closed or reset the connection: what it
    sent before is read (and dropped) first."""
    try:
        s.setblocking(False)
        for _ in range(4096):
            if s.recv(65536) == b"":
                return True
        return False
    except (BlockingIOError, ssl.SSLWantReadError):
        return False
    except (ssl.SSLError, OSError):
        return True


def wait_release(args, conns):
    if args.ready:
        with open(args.ready, "w") as f:
            f.write("%d\n" % len(conns))
    deadline = time.monotonic() + args.hold
    while not os.path.exists(args.release) and time.monotonic() < deadline:
        time.sleep(0.1)


def cmd_cover(args):
    ctx = tls_ctx()
    req = ("GET /%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (args.path, args.sni)) \
        .encode()
    conns, refused = [], 0
    for _ in range(args.conns):
        try:
            # Never read: the cover's answer piles up on the server.
            raw = connect(args, rcvbuf=4096)
            s = ctx.wrap_socket(raw, server_hostname=args.sni)
            s.sendall(req)
            conns.append(s)
        except (OSError, ssl.SSLError):
            refused += 1
    wait_release(args, conns)
    gone = sum(1 for s in conns if closed(s))
    log("cover: %d connections, %d refused at once, %d closed by the "
        "server later, %d held" % (args.conns, refused, gone,
                                   len(conns) - gone))
    return 0 if conns else 1


def cmd_preauth(args):
    hello = client_hello(args.sni)
    half = hello[:len(hello) // 2]
    ctx = tls_ctx()
    partial, idle, refused = [], [], 0
    # Interleaved, so that both kinds are held when the source's limit
    # refuses the rest.  The handshakes run side by side: a connection
    # the server keeps waiting for a turn answers nothing until then.
    for i in range(max(args.partial, args.idle)):
        if i < args.partial:
            try:
                s = connect(args)
                s.sendall(half)
                partial.append(s)
            except OSError:
                refused += 1
        if i < args.idle:
            try:
                raw = connect(args)
                t = ctx.wrap_socket(raw, server_hostname=args.sni,
                                    do_handshake_on_connect=False)
                t.setblocking(False)
                idle.append([t, False])
            except (OSError, ssl.SSLError):
                refused += 1
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline and not all(d for _, d in idle):
        for e in idle:
            if e[1]:
                continue
            try:
                e[0].do_handshake()
                e[1] = True
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                pass
            except (OSError, ssl.SSLError):
                e[1] = True     # refused: closed() tells below
        time.sleep(0.01)
    idle = [t for t, _ in idle]
    # A refusal at the accept is a reset that the connect did not see.
    time.sleep(0.3)
    early = sum(1 for s in partial + idle if closed(s))
    wait_release(args, partial + idle)
    gone = sum(1 for s in partial + idle if closed(s))
    log("preauth: %d partial ClientHellos, %d idle handshakes; %d refused "
        "at once (%d at the connect), %d closed by the server later, %d "
        "held" % (args.partial, args.idle, refused + early, refused,
                  gone - early, len(partial) + len(idle) - gone))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--server", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--source", required=True)
    p.add_argument("--sni", default="tunsplit.test")
    p.add_argument("--timeout", type=float, default=5)
    p.add_argument("--ready")
    p.add_argument("--release", default="/nonexistent")
    p.add_argument("--hold", type=float, default=60)
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("cover")
    a.add_argument("--conns", type=int, required=True)
    a.add_argument("--path", default="big")
    a = sub.add_parser("preauth")
    a.add_argument("--partial", type=int, default=0)
    a.add_argument("--idle", type=int, default=0)
    args = p.parse_args()
    return {"cover": cmd_cover, "preauth": cmd_preauth}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
