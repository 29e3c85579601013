#!/usr/bin/env python3
"""Differential active probing: the same probes against two TLS servers.

Used by tests/netns/e2e/e2e_probe_diff.sh to compare a tunsplit server
(with a cover site) with a reference nginx serving the same certificate
and site.  Every probe connects to both servers at once and records what
comes back: the bytes of every unencrypted TLS record (random fields --
server random, session id, key shares, signatures, tickets -- masked, their
lengths kept), the type and length of every encrypted record, a non-TLS
answer as text (the Date header masked), how the connection ended (FIN,
RST, or still open at the deadline) and when (the first answer byte and
the close, as timing classes).  Two observations that differ are a
difference; a difference listed in the --known file (probe name, then the
reason) is reported but does not fail.

Standard library only.  Exit status: 0 when every difference is known, 1
when there is a new one, 2 on a usage error.
"""

import argparse
import concurrent.futures
import os
import random
import re
import select
import socket
import ssl
import struct
import sys
import threading
import time

TIMEOUT = 60.0       # the servers' pre-request timeout (seconds)
SETTLE = 0.6         # quiet time that ends "what the server says now"


# ---- one connection ---------------------------------------------------------

class Conn:
    """A TCP connection whose every received byte is kept, with times."""

    def __init__(self, host, port, deadline):
        self.t0 = time.monotonic()
        self.deadline = self.t0 + deadline
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.rx = bytearray()
        self.close = None       # 'FIN', 'RST' or None (open)
        self.t_close = None
        self.t_sent = 0.0       # last send, relative to t0
        self.t_first = None     # first byte after the last send
        self.notes = []

    def now(self):
        return time.monotonic() - self.t0

    def send(self, data):
        if self.close is not None:
            return
        try:
            self.sock.setblocking(True)
            self.sock.sendall(data)
        except OSError as e:
            self.notes.append('send: %s' % e.__class__.__name__)
        finally:
            self.sock.setblocking(False)
        self.t_sent = self.now()
        self.t_first = None

    def shut_wr(self):
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        self.t_sent = self.now()
        self.t_first = None

    def recv(self, wait):
        """Bytes that arrive within wait seconds (b'' if none); None once
        the connection has ended."""
        if self.close is not None:
            return None
        end = min(time.monotonic() + wait, self.deadline)
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return b''
            r, _, _ = select.select([self.sock], [], [], left)
            if not r:
                return b''
            try:
                d = self.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except ConnectionResetError:
                self._ended('RST')
                return None
            if not d:
                self._ended('FIN')
                return None
            if self.t_first is None:
                self.t_first = self.now() - self.t_sent
            self.rx += d
            return d

    def _ended(self, how):
        self.close = how
        self.t_close = self.now()

    def settle(self, quiet=SETTLE):
        """Reads until the server has been quiet for `quiet` seconds."""
        while self.recv(quiet):
            pass

    def wait_close(self):
        """Reads until the connection ends or the deadline passes."""
        while self.recv(self.deadline - time.monotonic()) is not None:
            if time.monotonic() >= self.deadline:
                break

    def finish(self):
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack('ii', 1, 0))
        except OSError:
            pass
        self.sock.close()


class Tls:
    """Python's TLS client over a Conn, through memory BIOs, so that the
    raw records stay visible in conn.rx."""

    def __init__(self, conn, ctx, sni, session=None):
        self.c = conn
        self.inc = ssl.MemoryBIO()
        self.out = ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_hostname=sni,
                                session=session)
        self.app = bytearray()
        self.done = False

    def flush(self):
        d = self.out.read()
        if d:
            self.c.send(d)

    def handshake(self):
        while True:
            try:
                self.obj.do_handshake()
                self.flush()
                self.done = True
                return True
            except ssl.SSLWantReadError:
                self.flush()
                d = self.c.recv(self.c.deadline - time.monotonic())
                if not d:
                    return False
                self.inc.write(d)
            except (ssl.SSLError, OSError) as e:
                self.flush()
                self.c.notes.append('handshake: %s' % e.__class__.__name__)
                return False

    def pump(self, quiet=SETTLE, until_close=False):
        """Feeds what arrives to TLS (tickets, data, close_notify)."""
        while True:
            self._drain()
            wait = (self.c.deadline - time.monotonic()) if until_close \
                else quiet
            d = self.c.recv(wait)
            if not d:
                return
            self.inc.write(d)

    def _drain(self):
        while True:
            try:
                d = self.obj.read(65536)
                if not d:
                    return
                self.app += d
            except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                return
            except (ssl.SSLError, OSError):
                return

    def write(self, data):
        try:
            self.obj.write(data)
        except (ssl.SSLError, OSError) as e:
            self.c.notes.append('write: %s' % e.__class__.__name__)
        self.flush()

    def close_notify(self):
        try:
            self.obj.unwrap()
        except (ssl.SSLError, OSError):
            pass
        self.flush()


# ---- what came back -----------------------------------------------------------

HS_NAMES = {1: 'ClientHello', 2: 'ServerHello', 4: 'NewSessionTicket',
            8: 'EncryptedExtensions', 11: 'Certificate',
            12: 'ServerKeyExchange', 13: 'CertificateRequest',
            14: 'ServerHelloDone', 15: 'CertificateVerify', 20: 'Finished'}


def mask_hs(t, body):
    """A plaintext handshake message with its random fields masked."""
    b = bytearray(body)
    m = bytearray(len(b))           # 1: masked
    try:
        if t == 2:                  # ServerHello
            m[2:34] = b'\x01' * 32
            sid = b[34]
            m[35:35 + sid] = b'\x01' * sid
            p = 35 + sid + 3
            end = p + 2 + struct.unpack('>H', b[p:p + 2])[0] \
                if p + 2 <= len(b) else p
            p += 2
            while p + 4 <= end:
                et, el = struct.unpack('>HH', b[p:p + 4])
                if et == 0x33 and el > 4:
                    m[p + 8:p + 4 + el] = b'\x01' * (el - 4)
                p += 4 + el
        elif t == 12:               # ServerKeyExchange (ECDHE)
            pl = b[3]
            m[4:4 + pl] = b'\x01' * pl
            p = 4 + pl + 2
            sl = struct.unpack('>H', b[p:p + 2])[0]
            m[p + 2:p + 2 + sl] = b'\x01' * sl
        elif t == 4:                # NewSessionTicket (TLS 1.2)
            tl = struct.unpack('>H', b[4:6])[0]
            m[6:6 + tl] = b'\x01' * tl
    except (IndexError, struct.error):
        pass
    hexs = ''.join('..' if m[i] else '%02x' % b[i] for i in range(len(b)))
    # Long runs of masked bytes, shortened.
    hexs = re.sub(r'(?:\.\.){4,}', lambda x: '<%d>' % (len(x.group(0)) // 2),
                  hexs)
    return '%s(%d) %s' % (HS_NAMES.get(t, 'hs%d' % t), len(b), hexs)


DATE_RE = re.compile(rb'(?im)^(date|expires|last-modified|etag):[^\r\n]*')


def mask_text(d):
    d = DATE_RE.sub(lambda x: x.group(1) + b': *', bytes(d))
    return repr(d)[2:-1]


def observe(conn):
    """The observation of one connection: a list of events, then the
    close and its timing."""
    rx = bytes(conn.rx)
    ev = []
    if rx and not (20 <= rx[0] <= 23 and len(rx) > 1 and rx[1] == 3):
        ev.append('text ' + mask_text(rx))
    else:
        p = 0
        enc = False
        hs = bytearray()
        while p < len(rx):
            if p + 5 > len(rx):
                ev.append('partial header %s' % rx[p:].hex())
                break
            t, v, n = rx[p], struct.unpack('>H', rx[p + 1:p + 3])[0], \
                struct.unpack('>H', rx[p + 3:p + 5])[0]
            body = rx[p + 5:p + 5 + n]
            if len(body) < n:
                ev.append('partial record %02x %04x %d of %d' %
                          (t, v, len(body), n))
                break
            if t == 23 or enc:
                ev.append('enc %02x %04x len %d' % (t, v, n))
            elif t == 22:
                ev.append('rec 16 %04x len %d' % (v, n))
                hs += body
                while len(hs) >= 4:
                    ml = struct.unpack('>I', b'\0' + hs[1:4])[0]
                    if len(hs) < 4 + ml:
                        break
                    ev.append('  ' + mask_hs(hs[0], hs[4:4 + ml]))
                    del hs[:4 + ml]
            else:
                ev.append('rec %02x %04x %s' % (t, v, body.hex()))
            if t == 20:
                enc = True
            p += 5 + n
    return {'ev': ev, 'close': conn.close or 'open',
            't_close': conn.t_close, 't_first': conn.t_first,
            'notes': conn.notes}


def tclass(t):
    if t is None:
        return '-'
    if t < 0.8:
        return 'now'
    return '%.1fs' % t


def same_time(a, b):
    if a is None or b is None:
        return a is None and b is None
    if a < 0.8 and b < 0.8:
        return True
    if a < 0.8 or b < 0.8:
        return abs(a - b) <= 0.5 and max(a, b) < 1.2
    return abs(a - b) <= max(1.2, 0.15 * max(a, b))


def compare(a, b):
    """What differs between two observations, as text (empty: none)."""
    out = []
    if a['ev'] != b['ev']:
        n = max(len(a['ev']), len(b['ev']))
        shown = 0
        for i in range(n):
            ea = a['ev'][i] if i < len(a['ev']) else '(nothing)'
            eb = b['ev'][i] if i < len(b['ev']) else '(nothing)'
            if ea == eb:
                continue
            if shown == 4:
                out.append('... more events differ')
                break
            out.append('event %d: %s | %s' % (i, ea.strip()[:300],
                                               eb.strip()[:300]))
            shown += 1
    if a['close'] != b['close']:
        out.append('close: %s | %s' % (a['close'], b['close']))
    elif a['close'] != 'open' and not same_time(a['t_close'], b['t_close']):
        out.append('close time: %s | %s' % (tclass(a['t_close']),
                                            tclass(b['t_close'])))
    if not same_time(a['t_first'], b['t_first']):
        out.append('first answer: %s | %s' % (tclass(a['t_first']),
                                              tclass(b['t_first'])))
    return out


def summary(o):
    return '%d events, %s at %s, first answer %s' % (
        len(o['ev']), o['close'], tclass(o['t_close']), tclass(o['t_first']))


# ---- TLS client contexts ------------------------------------------------------

def ctx_for(tls12=False, tls13=False, alpn=None, ciphers=None,
            no_ticket=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if no_ticket:
        ctx.options |= ssl.OP_NO_TICKET
    if tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    if tls13:
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    if ciphers:
        ctx.set_ciphers(ciphers)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


# ---- hand-made hellos ----------------------------------------------------------

def ext(t, data):
    return struct.pack('>HH', t, len(data)) + data


def client_hello(rec_ver, hello_ver, suites, exts, seed=1, sid=b''):
    rnd = random.Random(seed)
    body = struct.pack('>H', hello_ver) + bytes(rnd.getrandbits(8)
                                               for _ in range(32))
    body += bytes([len(sid)]) + sid
    cs = b''.join(struct.pack('>H', s) for s in suites)
    body += struct.pack('>H', len(cs)) + cs + b'\x01\x00'
    e = b''.join(exts)
    if exts:
        body += struct.pack('>H', len(e)) + e
    hs = b'\x01' + struct.pack('>I', len(body))[1:] + body
    return struct.pack('>BHH', 22, rec_ver, len(hs)) + hs


def sni_ext(name):
    n = name.encode()
    entry = b'\x00' + struct.pack('>H', len(n)) + n
    return ext(0, struct.pack('>H', len(entry)) + entry)


def hello_legacy(ver, sni):
    """A TLS 1.0/1.1/SSLv3-only ClientHello with old suites."""
    exts = [sni_ext(sni), ext(10, b'\x00\x04\x00\x1d\x00\x17'),
            ext(11, b'\x01\x00')] if ver >= 0x0301 else []
    return client_hello(ver, ver, [0xc013, 0xc014, 0x002f, 0x0035,
                                   0x000a, 0x00ff], exts)


def hello_tls12(sni):
    exts = [sni_ext(sni), ext(10, b'\x00\x04\x00\x1d\x00\x17'),
            ext(11, b'\x01\x00'), ext(35, b''),
            ext(13, b'\x00\x08\x04\x01\x08\x04\x04\x03\x02\x01'),
            ext(16, b'\x00\x09\x08http/1.1')]
    return client_hello(0x0301, 0x0303, [0xc02f, 0xc030, 0xcca8, 0xc013,
                                         0x009c, 0x002f, 0x00ff], exts)


def hello_tls13(sni, suites, share=True, groups=(0x1d, 0x17)):
    """A TLS 1.3 ClientHello; the X25519 key share is any 32 bytes (the
    server answers before it could tell)."""
    g = b''.join(struct.pack('>H', x) for x in groups)
    ks = struct.pack('>HH', 0x1d, 32) + noise(11, 32) if share else b''
    exts = [sni_ext(sni) if sni else b'',
            ext(10, struct.pack('>H', len(g)) + g),
            ext(13, b'\x00\x08\x08\x04\x04\x03\x04\x01\x08\x05'),
            ext(16, b'\x00\x09\x08http/1.1'),
            ext(43, b'\x02\x03\x04'),
            ext(45, b'\x01\x01'),
            ext(51, struct.pack('>H', len(ks)) + ks)]
    return client_hello(0x0301, 0x0303, suites, [e for e in exts if e],
                        sid=noise(12, 32))


def hello_sslv2():
    """An SSLv2-format ClientHello offering SSL 3.0 and TLS 1.0."""
    suites = bytes.fromhex('00002f000035000005010080')
    chal = bytes(range(16))
    body = b'\x01\x03\x01' + struct.pack('>HHH', len(suites), 0, len(chal))
    body += suites + chal
    return struct.pack('>H', 0x8000 | len(body)) + body


def noise(seed, n, first=None):
    rnd = random.Random(seed)
    d = bytearray(rnd.getrandbits(8) for _ in range(n))
    if first is not None:
        d[0] = first
    return bytes(d)


# ---- probes --------------------------------------------------------------------
#
# A probe is a function (host, port, args) -> Conn, run against both
# servers at once.  The name says what it does; PROBES lists them.

def tls_probe(ctx_kw, sni='default', after=None, resume=False):
    def run(h, p, a):
        name = a.sni if sni == 'default' else sni
        ctx = ctx_for(**ctx_kw)
        session = None
        if resume:
            c0 = Conn(h, p, a.deadline)
            t0 = Tls(c0, ctx, name)
            if t0.handshake():
                t0.pump()
                session = t0.obj.session
            t0.close_notify()
            c0.settle()
            c0.finish()
            if session is None:
                c0.notes.append('no session to resume')
        c = Conn(h, p, a.deadline)
        t = Tls(c, ctx, name, session)
        if t.handshake():
            t.pump()
            if resume:
                c.notes.append('resumed %s' % t.obj.session_reused)
            if after is not None:
                after(c, t, a)
            else:
                t.close_notify()
                c.settle()
        else:
            c.wait_close()
        return c
    return run


def send_wait(data, close_notify=False, fin=False):
    """After the handshake: send data, then read until the connection
    ends (or the deadline passes)."""
    def after(c, t, a):
        if data:
            t.write(data)
        if close_notify:
            t.close_notify()
        if fin:
            c.shut_wr()
        c.wait_close()
    return after


def send_in_pieces(*pieces, gap=0.3):
    """After the handshake: each piece in its own record, gap seconds
    apart, then read until the connection ends."""
    def after(c, t, a):
        for i, p in enumerate(pieces):
            if i:
                time.sleep(gap)
            t.write(p)
        c.wait_close()
    return after


def send_then_close(data):
    def after(c, t, a):
        t.write(data)
        t.pump(quiet=1.0)
        t.close_notify()
        c.settle()
    return after


def raw_probe(data=b'', fin=False, wait=True):
    def run(h, p, a):
        c = Conn(h, p, a.deadline)
        if data:
            c.send(data)
        if fin:
            c.shut_wr()
        if wait:
            c.wait_close()
        else:
            c.settle()
        return c
    return run


def get(path='/', ver='1.1', close=False, extra=''):
    return ('GET %s HTTP/%s\r\nHost: %%s\r\n%s%s\r\n' % (
        path, ver, 'Connection: close\r\n' if close else '', extra))


def http_probe(req, **kw):
    def run(h, p, a):
        data = req.replace('%s', a.sni).encode() if isinstance(req, str) \
            else req
        return tls_probe(kw.get('ctx', {'alpn': ['h2', 'http/1.1']}),
                         after=send_wait(data))(h, p, a)
    return run


# The modification time of the site's files (e2e_probe_diff.sh sets it).
MTIME = 'Sun, 13 Sep 2020 12:26:40 GMT'
GZIP = 'Accept-Encoding: gzip\r\n'
H2_PREFACE = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
DEF = {'alpn': ['h2', 'http/1.1']}

PROBES = {
    # TLS 1.3 handshakes, then close_notify
    'tls13': tls_probe(dict(tls13=True, alpn=['h2', 'http/1.1'])),
    'tls13-no-alpn': tls_probe(dict(tls13=True)),
    'tls13-alpn-http11': tls_probe(dict(tls13=True, alpn=['http/1.1'])),
    'tls13-alpn-h2': tls_probe(dict(tls13=True, alpn=['h2'])),
    'tls13-alpn-http10': tls_probe(dict(tls13=True, alpn=['http/1.0'])),
    'tls13-alpn-unknown': tls_probe(dict(tls13=True, alpn=['xmpp-client'])),
    'tls13-no-sni': tls_probe(dict(tls13=True, alpn=['http/1.1']), sni=None),
    'tls13-other-sni': tls_probe(dict(tls13=True, alpn=['http/1.1']),
                                 sni='www.example.com'),
    'tls13-resume': tls_probe(dict(tls13=True, alpn=['h2', 'http/1.1']),
                              resume=True),
    # TLS 1.2
    'tls12': tls_probe(dict(tls12=True, alpn=['h2', 'http/1.1'])),
    'tls12-no-alpn-no-sni': tls_probe(dict(tls12=True), sni=None),
    'tls12-chacha': tls_probe(dict(tls12=True,
                                   ciphers='ECDHE-RSA-CHACHA20-POLY1305')),
    'tls12-cbc-sha': tls_probe(dict(tls12=True,
                                    ciphers='ECDHE-RSA-AES128-SHA')),
    'tls12-rsa-kx': tls_probe(dict(tls12=True, ciphers='AES256-GCM-SHA384')),
    'tls12-resume': tls_probe(dict(tls12=True, alpn=['http/1.1']),
                              resume=True),
    'tls12-resume-session-id': tls_probe(dict(tls12=True, no_ticket=True,
                                              alpn=['http/1.1']),
                                         resume=True),
    'tls12-hello-raw': raw_probe(None),             # set in main (needs SNI)
    'tls13-hello-client-order': raw_probe(None),    # the server's order?
    'tls13-hello-retry': raw_probe(None),           # no key share: HRR
    'tls13-hello-bad-sni': raw_probe(None),         # "a..b"
    'tls13-hello-no-common-group': raw_probe(None),
    # old versions, odd hellos
    'tls10-hello': raw_probe(None),
    'tls11-hello': raw_probe(None),
    'ssl3-hello': raw_probe(hello_legacy(0x0300, '')),
    'sslv2-hello': raw_probe(hello_sslv2()),
    'truncated-hello': raw_probe(None),
    'truncated-hello-fin': raw_probe(None, fin=True),
    'hello-bad-body': raw_probe(b'\x16\x03\x01\x00\x20' + noise(7, 32)),
    'record-overflow': raw_probe(b'\x16\x03\x01\xff\xff' + noise(8, 64)),
    'alert-first': raw_probe(b'\x15\x03\x01\x00\x02\x02\x28'),
    # not TLS at all
    'connect-fin': raw_probe(fin=True),
    'connect-silence': raw_probe(),
    'plain-http': raw_probe(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n'),
    'plain-http-partial': raw_probe(b'GET / HTTP/1.1\r\nHost: x\r\n'),
    'plain-connect': raw_probe(b'CONNECT x:443 HTTP/1.1\r\n\r\n'),
    'random-low': raw_probe(noise(3, 200, first=0x42)),
    'random-high': raw_probe(noise(4, 200, first=0xc3)),
    'random-fin': raw_probe(noise(5, 100, first=0x05), fin=True),
    # after the TLS handshake
    'get': http_probe(get()),
    'get-close': http_probe(get(close=True)),
    'get-http10': http_probe(get(ver='1.0')),
    'get-404': http_probe(get('/no-such-page', close=True)),
    'get-big': http_probe(get('/big.bin', close=True)),
    'get-tls12': http_probe(get(close=True),
                            ctx={'tls12': True, 'alpn': ['http/1.1']}),
    'bad-request': http_probe(b'garbage \x01\x02\r\n\r\n'),
    'large-header': http_probe(get(extra='X-Big: %s\r\n' % ('a' * 9000))),
    'h2-preface-on-http11': http_probe(H2_PREFACE),
    'partial-request': http_probe(b'GET / HTTP/1.1\r\nHost: x\r\n'),
    'silence-after-tls': tls_probe(DEF, after=send_wait(b'')),
    'close-notify-first': tls_probe(DEF, after=send_wait(b'',
                                                         close_notify=True)),
    'fin-after-tls': tls_probe(DEF, after=send_wait(b'', fin=True)),
    'byte-01': http_probe(b'\x01'),
    'byte-01-header': http_probe(b'\x01' + noise(9, 120)),
    'hex-digit': http_probe(b'a'),
    'hex-56': http_probe(b'0123456789abcdef' * 3 + b'01234567\r\n'),
    'get-then-close-notify': tls_probe(DEF, after=send_then_close(
        b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')),
    'pipelined': http_probe(get() + get('/no-such-page', close=True)),
    # record ends: nginx ends a record with every response, and fills
    # 16 KiB records in between (the site's files are dated MTIME)
    'head': http_probe('HEAD / HTTP/1.1\r\nHost: %s\r\n\r\n'),
    'pipelined-head': http_probe('HEAD / HTTP/1.1\r\nHost: %s\r\n\r\n' +
                                 get(close=True)),
    'pipelined-big': http_probe(get('/big.bin') + get('/no-such-page') +
                                get('/large.bin', close=True)),
    'pipelined-304': http_probe(get(extra='If-Modified-Since: %s\r\n' %
                                    MTIME) + get(close=True)),
    'pipelined-many': http_probe(get() * 8 + get('/no-such-page') * 4 +
                                 get(close=True)),
    'pipelined-post': http_probe(
        'POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 19\r\n\r\n'
        'HEAD / HTTP/1.1\r\n\r\nHEAD / HTTP/1.1\r\nHost: %s\r\n\r\n' +
        get(close=True)),
    'pipelined-chunked-post': http_probe(
        'POST / HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n'
        '\r\n5\r\nhello\r\n0\r\n\r\n' + get(close=True)),
    'expect-continue': http_probe(
        'POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n'
        'Expect: 100-continue\r\nConnection: close\r\n\r\n'),
    'get-gzip': http_probe(get(close=True, extra=GZIP)),
    'get-gzip-big': http_probe(get('/page.html', close=True, extra=GZIP)),
    'pipelined-gzip': http_probe(get('/page.html', extra=GZIP) +
                                 get(extra=GZIP) + get('/big.bin', extra=GZIP) +
                                 'HEAD /page.html HTTP/1.1\r\nHost: %s\r\n' +
                                 GZIP + '\r\n' + get(close=True)),
    'get-then-partial': http_probe(get() + 'GET / HTTP/1.1\r\nHost: %s\r\n'),
    'get-large': http_probe(get('/large.bin', close=True)),
    'get-range': http_probe(get('/big.bin', close=True,
                                extra='Range: bytes=100-20099\r\n')),
    'request-in-pieces': tls_probe(DEF, after=send_in_pieces(
        b'GE', b'T / HTTP/1.1\r\nHost: x\r\n', b'Connection: close\r\n\r\n')),
    'byte-01-then-rest': tls_probe(DEF, after=send_in_pieces(
        b'\x01', noise(13, 80))),
    'post': http_probe('POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 5'
                       '\r\nConnection: close\r\n\r\nhello'),
    'tls12-fin-after-tls': tls_probe(dict(tls12=True, alpn=['http/1.1']),
                                     after=send_wait(b'', fin=True)),
    'tls12-silence': tls_probe(dict(tls12=True, alpn=['http/1.1']),
                               after=send_wait(b'')),
}


def run_probe(name, fn, targets, args):
    res = {}
    errs = {}

    def one(label, h, p):
        try:
            c = fn(h, p, args)
            res[label] = observe(c)
            c.finish()
        except Exception as e:      # a probe's own failure, reported
            errs[label] = '%s: %s' % (e.__class__.__name__, e)

    th = [threading.Thread(target=one, args=(lbl, h, p))
          for lbl, h, p in targets]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return name, res, errs


def parse_target(s):
    label, hp = s.split('=', 1)
    host, port = hp.rsplit(':', 1)
    return label, host.strip('[]'), int(port)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--a', required=True, help='LABEL=HOST:PORT')
    ap.add_argument('--b', required=True, help='LABEL=HOST:PORT (reference)')
    ap.add_argument('--sni', required=True)
    ap.add_argument('--timeout', type=float, default=TIMEOUT,
                    help="the servers' configured timeout, seconds")
    ap.add_argument('--known', help='known differences: NAME REASON lines')
    ap.add_argument('--only', help='comma-separated probe names')
    ap.add_argument('--jobs', type=int, default=12)
    ap.add_argument('--verbose', action='store_true')
    args = ap.parse_args()
    # Long enough to see a timeout of `timeout` fire, with room for one
    # that fires late (a difference to report, not to miss).
    args.deadline = args.timeout * 1.5 + 4
    PROBES['tls12-hello-raw'] = raw_probe(hello_tls12(args.sni), wait=False)
    PROBES['tls13-hello-client-order'] = raw_probe(hello_tls13(
        args.sni, [0x1301, 0x1303, 0x1302]), wait=False)
    PROBES['tls13-hello-retry'] = raw_probe(hello_tls13(
        args.sni, [0x1301, 0x1302], share=False), wait=False)
    PROBES['tls13-hello-bad-sni'] = raw_probe(hello_tls13(
        'a..b', [0x1301, 0x1302]), wait=False)
    PROBES['tls13-hello-no-common-group'] = raw_probe(hello_tls13(
        args.sni, [0x1301], share=False, groups=(0x0101,)))
    PROBES['tls10-hello'] = raw_probe(hello_legacy(0x0301, args.sni))
    PROBES['tls11-hello'] = raw_probe(hello_legacy(0x0302, args.sni))
    th = hello_tls12(args.sni)
    PROBES['truncated-hello'] = raw_probe(th[:len(th) // 2])
    PROBES['truncated-hello-fin'] = raw_probe(th[:len(th) // 2], fin=True)

    known = {}
    if args.known:
        with open(args.known) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith('#'):
                    n, _, why = line.partition(' ')
                    known[n] = why.strip()
    names = args.only.split(',') if args.only else list(PROBES)
    for n in names + list(known):
        if n not in PROBES:
            print('unknown probe %s' % n)
            return 2
    targets = [parse_target(args.a), parse_target(args.b)]
    la, lb = targets[0][0], targets[1][0]
    new = fixed = 0
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        futs = [ex.submit(run_probe, n, PROBES[n], targets, args)
                for n in names]
        results = sorted((f.result() for f in futs),
                         key=lambda r: names.index(r[0]))
    for name, res, errs in results:
        if errs:
            diff = ['probe error: %s' % errs]
        else:
            diff = compare(res[la], res[lb])
        if args.verbose and not errs:
            for lbl in (la, lb):
                print('  %s %s: %s %s' % (name, lbl, summary(res[lbl]),
                                          res[lbl]['notes']))
                for e in res[lbl]['ev']:
                    print('      %s' % e[:400])
        if not diff:
            if name in known:
                fixed += 1
                print('fixed %s (listed as known: %s)' % (name, known[name]))
            else:
                print('same  %s: %s' % (name, summary(res[la])))
            continue
        if name in known:
            print('known %s: %s' % (name, known[name]))
        else:
            new += 1
            print('DIFF  %s (%s | %s)' % (name, la, lb))
        for d in diff:
            print('        %s' % d)
    print('%d probes in %.0f s: %d new differences, %d known, %d known '
          'ones gone' % (len(names), time.monotonic() - t0, new,
                         sum(1 for r in results if r[0] in known) - fixed,
                         fixed))
    return 1 if new else 0


if __name__ == '__main__':
    sys.exit(main())
