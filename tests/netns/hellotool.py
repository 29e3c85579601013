#!/usr/bin/env python3
"""Capture and compare TLS ClientHellos (the e2e_clienthello test).

  hellotool.py listen ADDR PORT OUTPREFIX COUNT
      accepts COUNT connections one after another and writes the first TLS
      record of each (the ClientHello, reassembled if it spans records) to
      OUTPREFIX.1, OUTPREFIX.2, ...; then answers a handshake_failure alert
      and closes, so the client gives up at once.  Prints "ready" when
      listening.
  hellotool.py tls12 ADDR PORT CERT KEY SECONDS
      a TLS server that stops at TLS 1.2: for SECONDS it accepts
      connections and prints one line for each, "<version> <bytes>": the
      version the handshake ended with (or "failed") and how many bytes the
      client sent after it.  Prints "ready" when listening.
  hellotool.py show FILE
      prints the parsed ClientHello and a JA4-like summary.
  hellotool.py compare REF FILE
      exits 0 if FILE is the same ClientHello as REF in everything but the
      fields that are random by nature: the random, the legacy session id's
      bytes, the key share's public keys, a pre_shared_key's identity and
      binder bytes (their lengths are compared).  Prints every difference
      otherwise (exit 1).

Standard library only.  The summary follows JA4's shape (protocol, version,
SNI, counts, first ALPN; sorted cipher list; sorted extension list, no SNI
or ALPN; signature algorithms) with SHA-256 prefixes, enough to tell two
fingerprints apart or equal; it is not meant to be a reference JA4.
"""

import hashlib
import socket
import ssl
import struct
import sys
import time

GREASE = {0x0a0a + 0x1010 * i for i in range(16)}

EXT_NAMES = {
    0: "server_name", 5: "status_request", 10: "supported_groups",
    11: "ec_point_formats", 13: "signature_algorithms", 16: "alpn",
    18: "signed_certificate_timestamp", 21: "padding",
    22: "encrypt_then_mac", 23: "extended_master_secret",
    27: "compress_certificate", 28: "record_size_limit",
    35: "session_ticket", 41: "pre_shared_key", 42: "early_data",
    43: "supported_versions", 45: "psk_key_exchange_modes",
    49: "post_handshake_auth", 50: "signature_algorithms_cert",
    51: "key_share", 0xff01: "renegotiation_info",
}


class Hello:
    pass


def u16(b, i):
    return struct.unpack_from("!H", b, i)[0]


def read_hello(data):
    """The ClientHello handshake message from raw bytes (records)."""
    msg = b""
    i = 0
    while i + 5 <= len(data):
        typ, _ver, ln = struct.unpack_from("!BHH", data, i)
        if typ != 22:
            raise ValueError("record type %d, not handshake" % typ)
        msg += data[i + 5:i + 5 + ln]
        i += 5 + ln
        if len(msg) >= 4 and len(msg) >= 4 + int.from_bytes(msg[1:4], "big"):
            break
    if len(msg) < 4 or msg[0] != 1:
        raise ValueError("not a ClientHello")
    n = int.from_bytes(msg[1:4], "big")
    if len(msg) < 4 + n:
        raise ValueError("truncated ClientHello")
    return data[1:3], msg[:4 + n]


def parse(data):
    h = Hello()
    h.record_version, msg = read_hello(data)
    h.length = len(msg)
    b = msg[4:]
    h.version = u16(b, 0)
    h.random = b[2:34]
    i = 34
    sl = b[i]
    h.session_id = b[i + 1:i + 1 + sl]
    i += 1 + sl
    cl = u16(b, i)
    h.ciphers = [u16(b, i + 2 + k) for k in range(0, cl, 2)]
    i += 2 + cl
    ml = b[i]
    h.compression = list(b[i + 1:i + 1 + ml])
    i += 1 + ml
    h.exts = []
    if i < len(b):
        el = u16(b, i)
        i += 2
        end = i + el
        while i < end:
            t, ln = struct.unpack_from("!HH", b, i)
            h.exts.append((t, b[i + 4:i + 4 + ln]))
            i += 4 + ln
    h.ext = dict(h.exts)
    return h


def u16_list(body, off=2):
    return [u16(body, off + k) for k in range(0, u16(body, 0), 2)]


def alpn_list(body):
    out, i = [], 2
    while i < len(body):
        out.append(body[i + 1:i + 1 + body[i]].decode("ascii", "replace"))
        i += 1 + body[i]
    return out


def key_shares(body):
    """[(group, key length)]: the keys themselves are random."""
    out, i = [], 2
    while i + 4 <= len(body):
        g, ln = struct.unpack_from("!HH", body, i)
        out.append((g, ln))
        i += 4 + ln
    return out


def psk_shape(body):
    """Lengths only: identities and binders are per-connection."""
    il = u16(body, 0)
    ids, i = [], 2
    while i < 2 + il:
        ln = u16(body, i)
        ids.append(ln)
        i += 2 + ln + 4
    return ("identities", ids, "binders_len", len(body) - 2 - il)


def normal(t, body):
    """An extension's content with its random parts reduced to lengths."""
    if t == 51:
        return ("key_share", key_shares(body))
    if t == 41:
        return ("pre_shared_key", psk_shape(body))
    if t == 21:
        return ("padding", len(body), set(body) <= {0})
    return body.hex()


def describe(t, body):
    name = EXT_NAMES.get(t, "unknown")
    if t == 0:
        return "%s %s" % (name, body[5:].decode("ascii", "replace"))
    if t in (10, 13, 50):
        return "%s %s" % (name, " ".join("%04x" % x for x in u16_list(body)))
    if t == 16:
        return "%s %s" % (name, ",".join(alpn_list(body)))
    if t == 43:
        return "%s %s" % (name, " ".join(
            "%04x" % u16(body, 1 + k) for k in range(0, body[0], 2)))
    if t == 51:
        return "%s %s" % (name, " ".join(
            "%04x/%d" % s for s in key_shares(body)))
    if t == 41:
        return "%s %s" % (name, psk_shape(body))
    return "%s %s" % (name, body.hex() if len(body) <= 24 else
                      "(%d bytes)" % len(body))


def ja4ish(h):
    vers = h.ext.get(43)
    top = h.version
    if vers is not None:
        vl = [u16(vers, 1 + k) for k in range(0, vers[0], 2)]
        vl = [v for v in vl if v not in GREASE]
        top = max(vl)
    ver = {0x0304: "13", 0x0303: "12", 0x0302: "11"}.get(top, "00")
    sni = "d" if 0 in h.ext else "i"
    ciphers = [c for c in h.ciphers if c not in GREASE]
    exts = [t for t, _ in h.exts if t not in GREASE]
    alpn = alpn_list(h.ext[16]) if 16 in h.ext else []
    a = (alpn[0][0] + alpn[0][-1]) if alpn else "00"
    head = "t%s%s%02d%02d%s" % (ver, sni, min(len(ciphers), 99),
                                 min(len(exts), 99), a)
    cs = ",".join("%04x" % c for c in sorted(ciphers))
    sig = ",".join("%04x" % x for x in u16_list(h.ext[13])) \
        if 13 in h.ext else ""
    es = ",".join("%04x" % e for e in sorted(e for e in exts
                                             if e not in (0, 16)))
    if sig:
        es += "_" + sig

    def short(s):
        return hashlib.sha256(s.encode()).hexdigest()[:12] if s else "0" * 12
    return "%s_%s_%s" % (head, short(cs), short(es))


def show(h, out=sys.stdout):
    print("ja4ish %s" % ja4ish(h), file=out)
    print("length %d, version %04x, session id %d bytes, compression %s"
          % (h.length, h.version, len(h.session_id), h.compression), file=out)
    print("ciphers (%d) %s" % (len(h.ciphers),
                               " ".join("%04x" % c for c in h.ciphers)),
          file=out)
    print("extensions %s" % ",".join(str(t) for t, _ in h.exts), file=out)
    for t, body in h.exts:
        print("  %5d %s" % (t, describe(t, body)), file=out)


def compare(ref, got):
    diffs = []

    def chk(what, a, b):
        if a != b:
            diffs.append("%s: reference %s, got %s" % (what, a, b))
    chk("record version", ref.record_version.hex(), got.record_version.hex())
    chk("legacy version", "%04x" % ref.version, "%04x" % got.version)
    chk("session id length", len(ref.session_id), len(got.session_id))
    chk("cipher suites", " ".join("%04x" % c for c in ref.ciphers),
        " ".join("%04x" % c for c in got.ciphers))
    chk("compression", ref.compression, got.compression)
    chk("extension order", ",".join(str(t) for t, _ in ref.exts),
        ",".join(str(t) for t, _ in got.exts))
    for t, body in ref.exts:
        if t in got.ext:
            chk("extension %d (%s)" % (t, EXT_NAMES.get(t, "?")),
                normal(t, body), normal(t, got.ext[t]))
    # Every length follows from the above; checked anyway as the summary.
    chk("ClientHello length", ref.length, got.length)
    return diffs


def listen(addr, port, prefix, count):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(8)
    s.settimeout(60)
    print("ready", flush=True)
    for n in range(1, count + 1):
        c, _ = s.accept()
        c.settimeout(10)
        data = b""
        while True:
            try:
                read_hello(data)
                break
            except ValueError:
                pass
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        with open("%s.%d" % (prefix, n), "wb") as f:
            f.write(data)
        # Fatal handshake_failure alert, TLS 1.2 record version.
        try:
            c.sendall(bytes([21, 3, 3, 0, 2, 2, 40]))
        except OSError:
            pass
        c.close()
    s.close()


def tls12(addr, port, cert, key, seconds):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(cert, key)
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(8)
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        s.settimeout(max(0.1, end - time.monotonic()))
        try:
            c, _ = s.accept()
        except socket.timeout:
            break
        c.settimeout(2)
        got, version = 0, "failed"
        try:
            t = ctx.wrap_socket(c, server_side=True)
            version = t.version()
            while True:
                b = t.recv(65536)
                if not b:
                    break
                got += len(b)
        except (OSError, ssl.SSLError):
            pass
        print("%s %d" % (version, got), flush=True)
        c.close()
    s.close()


def main(argv):
    if len(argv) == 7 and argv[1] == "tls12":
        tls12(argv[2], int(argv[3]), argv[4], argv[5], float(argv[6]))
        return 0
    if len(argv) == 6 and argv[1] == "listen":
        listen(argv[2], int(argv[3]), argv[4], int(argv[5]))
        return 0
    if len(argv) == 3 and argv[1] == "show":
        with open(argv[2], "rb") as f:
            show(parse(f.read()))
        return 0
    if len(argv) == 4 and argv[1] == "compare":
        with open(argv[2], "rb") as f:
            ref = parse(f.read())
        with open(argv[3], "rb") as f:
            got = parse(f.read())
        diffs = compare(ref, got)
        for d in diffs:
            print("DIFF %s" % d)
        return 1 if diffs else 0
    print(__doc__, file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
