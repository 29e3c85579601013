#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/).

The seeds are committed; this script documents how they were made and
remakes them: python3 tests/fuzz/mkcorpus.py [--out DIR].  Inputs found
by fuzzing are committed next to them under their own names and are never
touched here: fz_* (a campaign's merge, chosen for new coverage) and
crash reproducers (tests/fuzz/crashes/).

fuzz_header input: what a client sends after the TLS handshake.  The
version 1 seeds (no seed_ prefix) predate this script; the seed_v2-*
and seed_v3-* ones are version 2 and 3 headers under the harness's key,
bound to its exporter value (40 41 .. 5f), some followed by stream
bytes.

fuzz_frame input: datagram frames as they arrive on a stream (frame.h).
fuzz_trojan input: the first bytes of a connection (proto_trojan.h): a
request, then (or, when it is none, instead) trojan UDP packets.

fuzz_dns input: one DNS query, as an app sends it to port 53.

fuzz_sniff input: a mode byte, then first bytes (see fuzz_sniff.c).

fuzz_dnsstream input: a byte whose low bit picks the parser (0: DNS over
TCP's length prefix, 1: a DoH HTTP/1.1 response), or bit 1 set: a reply
to cut to its answer section (dnsstream_strip); then the bytes.

fuzz_chunks input: a settings byte, then a framed stream of a reusable
connection (see fuzz_chunks.c).

fuzz_resp input: one settings byte, then records [ctl:1][len:2][bytes the
server sends] (see fuzz_resp.c).

fuzz_status's seeds are not made here: they are real workers'
snapshots, caught by tests/fuzz/status_seeds.sh (root, gdb).

fuzz_tun input: one settings byte, then records [len:2][ctl:1][IP packet]
(see fuzz_tun.c); settings bit 7 runs the client's TCP flows instead of
the fake app.  ACK numbers are relative to lwIP's ISN; addresses are
from the documentation/benchmark ranges and never leave the process.
"""
import argparse
import hashlib
import os
import struct

CLIENT4, TARGET4 = bytes([198, 18, 0, 1]), bytes([10, 77, 2, 2])
CLIENT6 = bytes.fromhex("fdfedcba987600000000000000000001")
TARGET6 = bytes.fromhex("fd770002000000000000000000000002")


def csum(b):
    if len(b) & 1:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def ip4(proto, payload, src=CLIENT4, dst=TARGET4, ident=1, frag=0, mf=False,
        tot=None):
    flags = (0x2000 if mf else 0) | (frag // 8)
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, tot or 20 + len(payload), ident,
                    flags, 64, proto, 0, src, dst)
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def ip6(nh, payload, src=CLIENT6, dst=TARGET6):
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), nh, 64, src,
                       dst) + payload


def l4sum(proto, src, dst, seg):
    if len(src) == 4:
        pseudo = struct.pack("!4s4sBBH", src, dst, 0, proto, len(seg))
    else:
        pseudo = struct.pack("!16s16sIxxxB", src, dst, len(seg), proto)
    return csum(pseudo + seg)


SYN, FIN, RST, PSH, ACK = 0x02, 0x01, 0x04, 0x08, 0x10
SYN_OPTS = (struct.pack("!BBH", 2, 4, 1460) + b"\x01\x03\x03\x07" +
            b"\x04\x02\x01\x01")  # MSS, NOP+WS 7, SACK permitted, NOPs


def tcp(flags, seq, ack=0, data=b"", sport=40000, dport=80, win=65535,
        opts=b"", v6=False):
    off = (20 + len(opts)) // 4
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, off << 4, flags,
                      win, 0, 0) + opts + data
    src, dst = (CLIENT6, TARGET6) if v6 else (CLIENT4, TARGET4)
    s = l4sum(6, src, dst, seg)
    seg = seg[:16] + struct.pack("!H", s) + seg[18:]
    return ip6(6, seg) if v6 else ip4(6, seg)


def udp(data, sport=5353, dport=53, v6=False):
    seg = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
    src, dst = (CLIENT6, TARGET6) if v6 else (CLIENT4, TARGET4)
    seg = seg[:6] + struct.pack("!H", l4sum(17, src, dst, seg)) + seg[8:]
    return ip6(17, seg) if v6 else ip4(17, seg)


def echo(v6=False):
    if v6:
        m = struct.pack("!BBHHH", 128, 0, 0, 7, 1) + b"ping" * 8
        m = m[:2] + struct.pack("!H", l4sum(58, CLIENT6, TARGET6, m)) + m[4:]
        return ip6(58, m)
    m = struct.pack("!BBHHH", 8, 0, 0, 7, 1) + b"ping" * 8
    m = m[:2] + struct.pack("!H", csum(m)) + m[4:]
    return ip4(1, m)


def rec(pkt, ctl=0):
    return struct.pack("!HB", len(pkt), ctl) + pkt


def settings(mtu=2, limit=False, keep=4, flows=False):
    return bytes([(0x80 if flows else 0) | (keep << 4) |
                  (0x08 if limit else 0) | mtu])


# ctl: bits 0-3 clock advance (x 100 ms), bits 4-6 app action (with
# flows: the server's), bit 7 raw ack.  For the app or server in slot i
# the action is (action + i) & 7.
WRITE, SHUT, CLOSE, ABORT = 0x10, 0x30, 0x40, 0x50
PUSH_BIG, PUSH_FIN = 0x20, 0x40     # 1 MiB; 64 KiB then FIN (flows)


def session(v6=False, mtu=2, port=80, flows=False):
    isn = 1000
    t = lambda *a, **k: tcp(*a, dport=port, v6=v6, **k)  # noqa: E731
    return settings(mtu, flows=flows) + b"".join([
        rec(t(SYN, isn, opts=SYN_OPTS)),
        rec(t(ACK, isn + 1, 1)),
        rec(t(ACK | PSH, isn + 1, 1, b"GET / HTTP/1.0\r\n\r\n"), WRITE),
        rec(t(ACK, isn + 19, 4097), 0x02),
        rec(t(ACK | FIN, isn + 19, 4097), SHUT),
        rec(t(ACK, isn + 20, 4098), 0x05),
    ])


def tw_reuse(v6=False):
    """lwIP closes first (TIME_WAIT), then the app's next SYN on the same
    ports, once with an ISN after the old one and once before it."""
    t = lambda *a, **k: tcp(*a, sport=40100, v6=v6, **k)  # noqa: E731
    recs = []
    for isn in (7000, 900000, 10):
        recs += [
            rec(t(SYN, isn, opts=SYN_OPTS)),
            rec(t(ACK, isn + 1, 1), SHUT),
            rec(t(ACK | FIN, isn + 1, 2), 0x01),
        ]
    return settings(2) + b"".join(recs)


def bulk(mss, v6=False, mtu=2, flows=False, limit=False, acks=160,
         fin=False):
    """The app announces mss; its app (or the flow's server) pushes 1 MiB
    down.  The app acks one segment per ACK (slow start keeps lwIP ahead)
    with a window of 64 KiB << 7, so lwIP keeps its send queue full of
    small segments: what reset every such download before issue 14."""
    isn = 3000
    opts = struct.pack("!BBH", 2, 4, mss) + SYN_OPTS[4:]
    t = lambda *a, **k: tcp(*a, sport=40200, dport=443, v6=v6, **k)  # noqa
    recs = [rec(t(SYN, isn, opts=opts)),
            rec(t(ACK, isn + 1, 1), PUSH_BIG)]
    for i in range(1, acks + 1):
        recs.append(rec(t(ACK, isn + 1, 1 + i * mss), 0x01 if i % 40 == 0
                        else 0))
    if fin:
        recs += [rec(t(ACK, isn + 1, 1 + acks * mss), PUSH_FIN if flows
                     else SHUT),
                 rec(t(ACK | FIN, isn + 1, 1 + acks * mss), 0x03)]
    return settings(mtu, limit=limit, keep=2, flows=flows) + b"".join(recs)


def tun_seeds():
    s = {}
    # Small MSS, a lot of data down: the fake app and the client's flows.
    for mss in (536, 1220, 1460):
        s["v4_bulk_mss%d" % mss] = bulk(mss)
        s["v4_flow_bulk_mss%d" % mss] = bulk(mss, flows=True)
    s["v6_bulk_mss1220"] = bulk(1220, v6=True, mtu=1)
    s["v6_flow_bulk_mss1220"] = bulk(1220, v6=True, mtu=1, flows=True)
    s["v4_flow_bulk_mss536_mtu576"] = bulk(536, mtu=0, flows=True)
    s["v4_flow_bulk_mss1460_mtu9000_fin"] = bulk(1460, mtu=3, flows=True,
                                                 fin=True)
    s["v4_flow_bulk_mss8960_mtu9000"] = bulk(8960, mtu=3, flows=True)
    s["v4_flow_bulk_mss1460_budget"] = bulk(1460, flows=True, limit=True)
    s["v4_flow_session"] = session(flows=True)
    s["v6_flow_session"] = session(v6=True, mtu=4, flows=True)
    s["v4_session"] = session()
    s["v6_session"] = session(v6=True, mtu=4)
    s["v4_tw_reuse"] = tw_reuse()
    s["v6_tw_reuse"] = tw_reuse(v6=True)
    isn = 5000
    # Out of order data (SACK), a hole filled later, then a reset.
    s["v4_ooo_rst"] = settings(3) + b"".join([
        rec(tcp(SYN, isn, opts=SYN_OPTS)),
        rec(tcp(ACK, isn + 1, 1)),
        rec(tcp(ACK, isn + 1001, 1, b"b" * 1000)),
        rec(tcp(ACK, isn + 2001, 1, b"c" * 1000)),
        rec(tcp(ACK, isn + 1, 1, b"a" * 1000), 0x01),
        rec(tcp(RST, isn + 3001, 0), 0x81),
    ])
    # The app writes and closes first; the peer's window is zero for a
    # while (persist timer), then opens.
    s["v4_zero_window"] = settings(1) + b"".join([
        rec(tcp(SYN, isn, opts=SYN_OPTS)),
        rec(tcp(ACK, isn + 1, 1, win=0), WRITE),
        rec(tcp(ACK, isn + 1, 1, win=0), 0x0f),
        rec(tcp(ACK, isn + 1, 1, win=0), 0x0f),
        rec(tcp(ACK, isn + 1, 1, win=65535), CLOSE),
        rec(tcp(ACK | FIN, isn + 1, 1), 0x0a),
    ])
    # A SYN in two IPv4 fragments, and a lone first fragment that must
    # time out.
    seg = tcp(SYN, isn, opts=SYN_OPTS)[20:]
    s["v4_fragments"] = settings() + b"".join([
        rec(ip4(6, seg[:16], ident=9, mf=True)),
        rec(ip4(6, seg[16:], ident=9, frag=16)),
        rec(ip4(6, seg[:8], ident=10, mf=True)),
        rec(tcp(ACK, isn + 1, 1), 0x0f),
    ])
    # IPv6 fragment header (next header 6, offset 0, last fragment).
    seg6 = tcp(SYN, isn, opts=SYN_OPTS, v6=True)[40:]
    s["v6_fragment"] = settings(4) + rec(ip6(44, struct.pack(
        "!BBHI", 6, 0, 0, 0x1234) + seg6))
    # Not TCP: UDP (v4, v6), ICMP echo (v4, v6), a multicast destination.
    s["other"] = settings() + b"".join([
        rec(udp(b"\x12\x34\x01\x00\x00\x01" + b"\0" * 6)),
        rec(udp(b"hello", v6=True)),
        rec(echo()),
        rec(echo(v6=True)),
        rec(ip4(17, b"\0" * 12, dst=bytes([239, 1, 2, 3]))),
    ])
    # Flow limit: five SYNs on different ports with room for two.
    s["syn_limit"] = settings(limit=True, keep=2) + b"".join(
        rec(tcp(SYN, isn + i, sport=41000 + i, dport=443 + i)) +
        rec(tcp(ACK, isn + i + 1, 1, sport=41000 + i, dport=443 + i))
        for i in range(5))
    # Malformed: truncated headers, a length beyond the data, wrong
    # version, a header length below 20.
    full = tcp(SYN, isn)
    s["malformed"] = settings() + b"".join([
        rec(full[:19]),
        rec(full[:30]),
        rec(ip4(6, full[20:], tot=200)),
        rec(b"\x55" + full[1:]),
        rec(b"\x44" + full[1:]),
        rec(ip6(6, b"\0" * 10)),
        rec(b""),
    ]) + b"\x00\x40\x00" + full[:10]   # last record shorter than stated
    s.update(offload_seeds())
    return s


NEEDS_CSUM, GSO_TCPV4, GSO_UDP, GSO_TCPV6, GSO_UDP_L4 = 1, 1, 3, 4, 5


def vrec(pkt, ctl=0, flags=0, gso=0, hdr_len=0, gso_size=0, start=0, off=0):
    """A record with offloads (MTU choices 5-7): virtio-net header
    (native byte order, little-endian here), then the packet."""
    return rec(struct.pack("<BBHHHH", flags, gso, hdr_len, gso_size, start,
                           off) + pkt, ctl)


def offload_seeds():
    s = {}
    isn = 6000
    for v6, mtu, mss in ((False, 6, 536), (False, 7, 1460), (True, 5, 1220)):
        t = lambda *a, **k: tcp(*a, sport=40300, dport=443, v6=v6,  # noqa
                                **k)
        opts = struct.pack("!BBH", 2, 4, mss) + SYN_OPTS[4:]
        l3 = 40 if v6 else 20
        recs = [vrec(t(SYN, isn, opts=opts)),
                vrec(t(ACK, isn + 1, 1), PUSH_BIG)]
        for i in range(1, 41):
            recs.append(vrec(t(ACK, isn + 1, 1 + i * 20 * mss),
                             0x01 if i % 10 == 0 else 0))
        # A super-packet up: 20000 bytes as one read, partial checksum.
        recs.append(vrec(t(ACK | PSH, isn + 1, 1, b"u" * 20000), 0,
                         NEEDS_CSUM, GSO_TCPV6 if v6 else GSO_TCPV4,
                         l3 + 20, mss, l3, 16))
        name = "off_%s_bulk_mss%d" % ("v6" if v6 else "v4", mss)
        s[name] = settings(mtu, keep=2) + b"".join(recs)
        s["off_%s_flow_bulk_mss%d" % ("v6" if v6 else "v4", mss)] = (
            settings(mtu, keep=2, flows=True) + b"".join(recs))
    # Headers that lie about their packet: dropped and counted.
    t = lambda *a, **k: tcp(*a, sport=40400, **k)  # noqa: E731
    data = t(ACK | PSH, isn + 1, 1, b"d" * 3000)
    s["off_bad_headers"] = settings(6) + b"".join([
        vrec(t(SYN, isn, opts=SYN_OPTS)),
        vrec(t(ACK, isn + 1, 1)),
        vrec(data, 0, NEEDS_CSUM, GSO_TCPV4, 40, 0, 20, 16),     # size 0
        vrec(data, 0, NEEDS_CSUM, GSO_TCPV4, 4000, 1460, 20, 16),  # hdr_len
        vrec(data, 0, NEEDS_CSUM, GSO_TCPV6, 40, 1460, 20, 16),  # not v6
        vrec(data, 0, NEEDS_CSUM, GSO_UDP, 40, 1460, 20, 16),    # UDP
        vrec(data, 0, NEEDS_CSUM, GSO_TCPV4, 40, 1460, 20, 6),   # offset
        vrec(data, 0, NEEDS_CSUM, 0, 0, 0, 3000, 60),            # past end
        vrec(data, 0, 0x80),                                     # flag
        vrec(udp(b"partial"), 0, NEEDS_CSUM, 0, 0, 0, 20, 6),
        rec(b"\x01\x04"),                                        # short
    ])
    # UDP super-packets (USO): cut into datagrams for the UDP path.
    s["off_uso"] = settings(6) + b"".join([
        vrec(udp(b"q" * 3000), 0, NEEDS_CSUM, GSO_UDP_L4, 28, 1000, 20, 6),
        vrec(udp(b"r" * 2500, v6=True), 0, NEEDS_CSUM, GSO_UDP_L4, 48,
             1200, 40, 6),
        vrec(udp(b"s" * 100), 0, NEEDS_CSUM, GSO_UDP_L4, 28, 0, 20, 6),
        vrec(udp(b"t" * 100), 0, NEEDS_CSUM, GSO_UDP_L4, 28, 10, 20, 16),
    ])
    return s


CONF_SEEDS = {
    "client": """log: {level: debug}
tun: {name: ts0, mtu: 1500, address: [198.18.0.1/15, "fdfe:dcba:9876::1/64"]}
client:
  server: "server.example:8443"
  sni: www.example.com
  key: UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I=
  congestion: cubic
  mark: 0x7353
  max_flows: 12000
  connect_timeout: 5s
  idle_timeout: 2m
""",
    "server": """log: {level: info, syslog: true}
server:
  listen: ["0.0.0.0:443", "[::]:443"]
  cert: /etc/tunsplit/cert.pem
  cert_key: /etc/tunsplit/key.pem
  users:
    - {name: alice, key: UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I=}
    - {name: bob, key: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}
  max_conns: 100
  handshake_timeout: 3s
  idle_timeout: 300
  time_window: 60
  egress: {allow: [10.77.2.0/24, "fd77:2::/64"], deny: [203.0.113.0/24]}
""",
    "bad_indent": "client:\n  server: a:1\n    key: x\n",
    "anchors": "a: &x {level: debug}\nlog: *x\nclient: {server: \"[::1]:1\", key: *x}\n",
    "flow_seq": "server: {listen: [1.2.3.4:5], users: [], egress: {allow: []}}\n",
    "both_roles": "client: {}\nserver: {}\n",
    "durations": "client: {connect_timeout: 250ms, idle_timeout: 1h, server: h:1}\n",
    "server_names": """server:
  listen: 0.0.0.0:443
  cert: /c.pem
  cert_key: /k.pem
  users:
    - name: alice
      key: UR8GBfXkCWILEa357of526YctXNYj5edwp3e59D7Z7I=
      egress_allow: [10.20.0.0/16, "fd20::/64"]
      egress_deny: 10.20.9.0/24
  trojan_passwords:
    - plain
    - {password: mapped, egress_allow: [192.168.7.0/24], egress_deny: []}
  resolver: {workers: 2, queue: 8, timeout: 1500ms, cache: 0, cache_ttl: 5s, negative_ttl: 0}
""",
}


HDR_KEY = bytes(range(32))
HDR_BIND = bytes(range(0x40, 0x60))


def header(version, kind, addr, port, pad=0, ts=1700000000,
           nonce=bytes(range(0xa0, 0xb0)), key=HDR_KEY, bind=HDR_BIND,
           tag=b""):
    """A request header (doc/PROTOCOL.md); version 2 and 3 MACs bind
    after it; tag starts the padding (the reuse tag)."""
    uid = hashlib.blake2b(b"tunsplit user id", key=key,
                          digest_size=32).digest()[:8]
    body = addr + struct.pack("!H", port) + struct.pack("!H", pad) + \
        tag + bytes((i * 7 + 3) & 0xff for i in range(pad - len(tag)))
    hlen = 36 + len(body) + 32
    h = bytes([version, kind]) + struct.pack("!HQ", hlen, ts) + nonce + \
        uid + body
    mac = hashlib.blake2b(h + (bind if version != 1 else b""), key=key,
                          digest_size=32).digest()
    return h + mac


def header_seeds():
    v4 = bytes([1, 192, 0, 2, 1])
    v6 = bytes([4]) + bytes.fromhex("20010db8000000000000000000000001")
    dom = bytes([3, 11]) + b"example.com"
    return {
        "v2-v4": header(2, 1, v4, 443),
        "v2-v6-udp": header(2, 2, v6, 8080, pad=200),
        "v2-domain-icmp": header(2, 3, dom, 0, pad=17),
        "v2-v4-early": header(2, 1, v4, 80, pad=300) +
        b"GET / HTTP/1.1\r\n\r\n",
        "v2-other-bind": header(2, 1, v4, 443, bind=bytes(32)),
        "v2-fresh": header(2, 1, v4, 443, ts=1700000060,
                           nonce=bytes(range(16))),
        "v1-fresh": header(1, 1, v4, 443, ts=1700000060,
                           nonce=bytes(range(1, 17))),
        "v2-reuse-tag": header(2, 1, v4, 443, pad=40,
                               tag=b"tunsplit-reuse/3"),
        "v3-v4-early": header(3, 1, v4, 80, pad=300, ts=1700000120,
                              nonce=bytes(range(2, 18))) +
        b"\x00\x05hello\x00\x00",
    }


def frame(atyp, addr, port, payload):
    if atyp == 3:
        a = bytes([len(addr)]) + addr
    else:
        a = addr
    return struct.pack("!HB", len(payload), atyp) + a + \
        struct.pack("!H", port) + payload


def frame_seeds():
    dns = bytes.fromhex("12340100000100000000000003777777076578616d706c6503"
                        "636f6d0000010001")
    return {
        "v4_dns": frame(1, TARGET4, 53, dns),
        "v6_empty": frame(4, TARGET6, 9, b""),
        "domain": frame(3, b"example.com", 443, b"hello"),
        "stream": frame(1, TARGET4, 7, b"a" * 100) +
        frame(4, TARGET6, 7, b"b" * 300) + frame(3, b"x", 1, b"c"),
        "icmp_seq": frame(1, TARGET4, 0x1234, b"ping" * 14),
        "truncated": frame(4, TARGET6, 53, dns)[:30],
        "bad_atyp": b"\x00\x04\x02abcd\x00\x35data",
        "too_long": b"\xff\xf8\x01\x0a\x4d\x02\x02\x00\x35",
        "domain_nul": frame(3, b"exa\0mple", 80, b"x"),
    }


def trojan_seeds():
    import hashlib
    h = hashlib.sha224(b"password").hexdigest().encode()

    def req(cmd, atyp, addr, port):
        a = bytes([len(addr)]) + addr if atyp == 3 else addr
        return h + b"\r\n" + bytes([cmd, atyp]) + a + \
            struct.pack("!H", port) + b"\r\n"
    def pkt(atyp, addr, port, payload, crlf=b"\r\n"):
        a = bytes([len(addr)]) + addr if atyp == 3 else addr
        return bytes([atyp]) + a + struct.pack("!HH", port, len(payload)) + \
            crlf + payload
    udp = req(3, 1, TARGET4, 53)
    return {
        "udp_stream": udp + pkt(1, TARGET4, 53, b"query") +
        pkt(4, TARGET6, 5353, b"") + pkt(3, b"www.example.com", 7, b"x" * 300),
        "udp_bare": pkt(1, TARGET4, 9, b"abc") + pkt(4, TARGET6, 9, b"de"),
        "udp_truncated": udp + pkt(1, TARGET4, 53, b"0123456789")[:-3],
        "udp_bad_crlf": udp + pkt(1, TARGET4, 53, b"q", crlf=b"\n\r"),
        "udp_oversize": udp + bytes([1]) + TARGET4 + b"\x00\x35\xff\xf8\r\n",
        "udp_nul_name": udp + pkt(3, b"a\0b", 53, b"q"),
        "connect_v4": req(1, 1, TARGET4, 80) + b"GET / HTTP/1.0\r\n\r\n",
        "connect_v6": req(1, 4, TARGET6, 443),
        "connect_name": req(1, 3, b"www.example.com", 443),
        "udp_v4": req(3, 1, TARGET4, 53),
        "upper_hex": h.upper() + req(1, 1, TARGET4, 80)[56:],
        "no_crlf": h + b"\n\n\x01\x01" + TARGET4 + b"\x00\x50\r\n",
        "native": bytes([1, 1, 0, 75]) + bytes(71),
        "http_probe": b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n",
    }


def resp_seeds():
    """fuzz_resp: settings byte, then records [ctl][len:2][server bytes]."""
    def st(mode=0, dns=False, mtu=2, res6=False, reset=False, trojan=False,
           socks=False):
        return bytes([mode | (4 if dns else 0) | (mtu << 3) |
                      (0x20 if trojan or socks else 0) |
                      (2 if socks else 0) | (0x40 if res6 else 0) |
                      (0x80 if reset else 0)])

    def sdg(atyp, addr, port, payload, frag=0, rsv=b"\0\0"):
        a = bytes([len(addr)]) + addr if atyp == 3 else addr
        return rsv + bytes([frag, atyp]) + a + struct.pack("!H", port) + \
            payload

    def tpkt(atyp, addr, port, payload, crlf=b"\r\n"):
        a = bytes([len(addr)]) + addr if atyp == 3 else addr
        return bytes([atyp]) + a + struct.pack("!HH", port, len(payload)) + \
            crlf + payload

    def r(data, send=None, piece=0):
        ctl = (piece << 4) | ((1 | (send << 1)) if send is not None else 0)
        return struct.pack("!BH", ctl, len(data)) + data

    peer4 = bytes([192, 0, 2, 10])
    peer6 = bytes.fromhex("20010db80000000000000000000000" + "0a")
    res4 = bytes([10, 77, 2, 53])
    res6 = bytes.fromhex("fd770002000000000000000000000053")
    q = lambda txid, body=b"answer": struct.pack("!H", txid) + body  # noqa
    return {
        "udp4": st() + r(b"\0" + frame(1, peer4, 4000, b"abc")),
        "udp6_mixed": st(1) + r(b"\0") + r(frame(4, peer6, 4000, b"x" * 40) +
                                          frame(1, peer4, 9, b"dropped")),
        "dns4": st(0, dns=True) + r(b"\0", send=1) +
        r(frame(1, res4, 53, q(1)), send=2) + r(frame(1, res4, 53, q(2))) +
        r(frame(1, res4, 53, q(7))) + r(frame(1, peer4, 53, q(1))),
        "dns6_res4": st(1, dns=True) + r(b"\0" + frame(1, res4, 53, q(0))),
        "dns4_res6": st(0, dns=True, res6=True) +
        r(b"\0" + frame(4, res6, 53, q(0)) + frame(4, res6, 54, q(0))),
        "icmp4": st(2) + r(b"\0" + frame(1, peer4, 0, b"ping" * 8), send=1) +
        r(frame(1, peer4, 1, b"pong")),
        "icmp6": st(3, mtu=1) + r(b"\0" + frame(4, peer6, 0, b"p" * 3000)),
        "frag4": st(0, mtu=0) + r(b"\0" + frame(1, peer4, 4000, b"f" * 4000),
                                  piece=5),
        "frag6": st(1, mtu=0) + r(b"\0" + frame(4, peer6, 4000, b"g" * 2000)),
        "denied": st() + r(bytes([2])),
        "malformed": st() + r(b"\0" + frame(1, peer4, 1, b"ok") +
                              b"\x00\x01\x09"),
        "nul_name": st() + r(b"\0" + frame(3, b"a\0b", 1, b"x")),
        "domain": st() + r(b"\0" + frame(3, b"example.com", 1, b"x")),
        "split": st() + b"".join(r(bytes([c])) for c in
                                 b"\0" + frame(1, peer4, 4000, b"split")),
        "truncated_reset": st(reset=True) + r(b"\0" + frame(1, peer4, 1,
                                                         b"abcdef")[:-2]),
        "empty_eof": st(),
        "trojan_udp4": st(trojan=True) + r(tpkt(1, peer4, 4000, b"abc")) +
        r(tpkt(4, peer6, 4000, b"dropped"), send=1),
        "trojan_dns6": st(1, dns=True, trojan=True) +
        r(tpkt(1, res4, 53, q(0)), send=3) + r(tpkt(1, res4, 53, q(3))),
        "trojan_frag6": st(1, mtu=0, trojan=True) +
        r(tpkt(4, peer6, 9, b"t" * 3000), piece=9),
        "trojan_bad_crlf": st(trojan=True) + r(tpkt(1, peer4, 1, b"x",
                                                    crlf=b"\n\r")),
        "trojan_oversize": st(trojan=True) + r(bytes([1]) + peer4 +
                                              b"\x00\x35\xff\xf8\r\n"),
        "trojan_name": st(trojan=True) + r(tpkt(3, b"example.com", 53, b"q")),
        "trojan_empty_eof": st(trojan=True),
        "socks_udp4": st(socks=True) + r(sdg(1, peer4, 4000, b"abc")) +
        r(sdg(4, peer6, 4000, b"dropped"), send=1) +
        r(sdg(1, peer4, 4001, b"rsv", rsv=b"\xff\xff")),
        "socks_dns6": st(1, dns=True, socks=True) +
        r(sdg(1, res4, 53, q(0)), send=2) + r(sdg(1, res4, 53, q(2))),
        "socks_frag6": st(1, mtu=0, socks=True, reset=True) +
        r(sdg(4, peer6, 9, b"s" * 3000)),
        "socks_bad": st(socks=True) + r(sdg(1, peer4, 1, b"x", frag=1)) +
        r(b"") + r(b"\0\0\0\x01\xc0") + r(sdg(3, b"a\0b", 1, b"x")) +
        r(sdg(3, b"example.com", 53, b"q")) + r(sdg(1, peer4, 2, b"ok")),
    }


def socks5_seeds():
    """fuzz_socks5: what a SOCKS5 proxy sends the client."""
    def reply(rep, atyp, addr, port):
        a = bytes([len(addr)]) + addr if atyp == 3 else addr
        return bytes([5, rep, 0, atyp]) + a + struct.pack("!H", port)

    def udp(atyp, addr, port, data, frag=0):
        a = bytes([len(addr)]) + addr if atyp == 3 else addr
        return bytes([0, 0, frag, atyp]) + a + struct.pack("!H", port) + data
    return {
        "noauth_v4": b"\x05\x00" + reply(0, 1, TARGET4, 1080),
        "userpass_v6": b"\x05\x02\x01\x00" + reply(0, 4, TARGET6, 443),
        "auth_failed": b"\x05\x02\x01\x01",
        "refused": b"\x05\xff",
        "rep_refused": b"\x05\x00" + reply(5, 1, bytes(4), 0),
        "name": b"\x05\x00" + reply(0, 3, b"proxy.example.com", 8080),
        "name_nul": b"\x05\x00" + reply(0, 3, b"a\0b", 1),
        "name_empty": b"\x05\x00\x05\x00\x00\x03\x00\x00\x50",
        "bad_atyp": b"\x05\x00\x05\x00\x00\x02abcd\x00\x50",
        "udp_v4": b"\x05\x00" + reply(0, 1, TARGET4, 1080) +
        udp(1, TARGET4, 53, b"answer"),
        "udp_v6": b"\x05\x00" + reply(0, 1, TARGET4, 1080) +
        udp(4, TARGET6, 53, b""),
        "udp_frag": b"\x05\x00" + reply(0, 1, TARGET4, 1080) +
        udp(1, TARGET4, 53, b"x", frag=1),
        "udp_name": udp(3, b"example.com", 53, b"q"),
        "early_data": b"\x05\x00" + reply(0, 1, TARGET4, 80) +
        b"HTTP/1.0 200 OK\r\n",
        "http": b"HTTP/1.1 400 Bad Request\r\n\r\n",
    }


def dns_seeds():
    """fuzz_dns: what an app sends to port 53."""
    def name(*labels):
        return b"".join(bytes([len(x)]) + x for x in labels) + b"\0"

    def q(qname, qtype=1, ar=b"", nar=0, flags=0x0100, txid=0x1234):
        return struct.pack("!HHHHHH", txid, flags, 1, 0, 0, nar) + qname + \
            struct.pack("!HH", qtype, 1) + ar
    opt = b"\0" + struct.pack("!HHIH", 41, 4096, 0x8000, 0)
    ex = name(b"example", b"com")
    return {
        "a": q(ex),
        "aaaa_opt": q(ex, 28, opt, 1),
        "opt_cookie": q(ex, 1, b"\0" + struct.pack("!HHIHHH", 41, 1232, 0,
                                                    12, 10, 8) + bytes(8), 1),
        "opt_v1": q(ex, 1, b"\0" + struct.pack("!HHIH", 41, 512, 0x10000,
                                                0), 1),
        "two_opt": q(ex, 1, opt + opt, 2),
        "mx": q(name(b"Mail", b"Example", b"ORG"), 15),
        "ptr_back": q(ex, 1, b"\x03www\xc0\x0c" + struct.pack("!HHIH", 1, 1,
                                                           0, 4) + bytes(4), 1),
        "ptr_self": q(b"\xc0\x0c"),
        "ptr_loop": q(b"\x01a\xc0\x15", 1, b"\xc0\x0c" +
                      struct.pack("!HHIH", 1, 1, 0, 0), 1),
        "long_name": q(name(*([b"a" * 63] * 3 + [b"c" * 61]))),
        "too_long": q(name(*([b"a" * 63] * 4 + [b"bb"]))),
        "dot_inside": q(name(b"a.b", b"com")),
        "root": q(b"\0", 2),
        "response": q(ex, flags=0x8180),
    }


def client_hello(sni):
    """The records Python's (OpenSSL's) TLS client writes first."""
    import ssl
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


def sniff_seeds():
    """fuzz_sniff: a mode byte (0 raw, 1 Initial frames, 2 hello with a
    cut byte), then a flow's or a datagram's first bytes."""
    sni, nosni = client_hello("www.example.com"), client_hello(None)
    body = sni[5:]

    def crypto(off, data):
        return (bytes([6, 0x40 | off >> 8, off & 0xff,
                       0x40 | len(data) >> 8, len(data) & 0xff]) + data)
    return {
        "tls_sni": b"\0" + sni,
        "tls_nosni": b"\0" + nosni,
        "tls_cut": b"\0" + sni[:60],
        "hello_split": b"\2\x50" + body,
        "hello_nosni": b"\2\x07" + nosni[5:],
        "http_host": b"\0GET / HTTP/1.1\r\nHost: Example.COM:8080\r\n\r\n",
        "http_v6": b"\0GET / HTTP/1.0\r\nhost: [2001:db8::1]\r\n\r\n",
        "http_nohost": b"\0POST /x HTTP/1.1\r\nA: b\r\n\r\n",
        "ssh": b"\0SSH-2.0-OpenSSH_9.2p1\r\n",
        "frames": b"\1" + crypto(40, body[40:]) + b"\1\2\5\0\1\1\2\0\0" +
        crypto(0, body[:40]),
        "frames_ack_ecn": b"\1\3\0\0\0\0\1\2\3\x1c\0\0\0",
        "quic_hdr": b"\0\xc3\0\0\0\1\x08" + bytes(8) + b"\0\0\x44\x9e" +
        bytes(40),
    }


def dnsstream_seeds():
    reply = bytes.fromhex("123481800001000100000000") + b"\3www\7example\0" + \
        bytes.fromhex("00010001c00c000100010000012c00040a000001")
    ok = b"HTTP/1.1 200 OK\r\nContent-Type: application/dns-message\r\n"
    return {
        "tcp_one": b"\0" + len(reply).to_bytes(2, "big") + reply,
        "tcp_two": b"\0" + (len(reply).to_bytes(2, "big") + reply) * 2,
        "tcp_short": b"\0\0\x40" + reply[:10],
        "tcp_big": b"\0\xff\xff" + reply,
        "http_one": b"\1" + ok + b"Content-Length: %d\r\n\r\n" %
        len(reply) + reply,
        "http_close": b"\1HTTP/1.0 200 OK\r\nConnection: close\r\n"
        b"Content-Length: 12\r\n\r\n" + reply[:12],
        "http_chunked": b"\1" + ok + b"Transfer-Encoding: chunked\r\n\r\n"
        b"c\r\n" + reply[:12] + b"\r\n0\r\n\r\n",
        "http_big": b"\1" + ok + b"Content-Length: 70000\r\n\r\n" + reply,
        "http_502": b"\1HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n",
        "strip_one": b"\2" + reply[:10] + b"\0\1" + reply[12:] +
        bytes.fromhex("c00c000100010000012c00040a000002"),
        "strip_short": b"\2" + reply[:-3],
    }


def chunks_seeds():
    """fuzz_chunks: a settings byte (low nibble: share handed over as
    early bytes, high nibble: log2 of the read size), then a framed
    stream: chunks [len:2][bytes], the end marker 00 00, what follows."""
    def ch(b):
        return struct.pack("!H", len(b)) + b
    return {
        "end_only": b"\x30" + b"\0\0",
        "one": b"\x35" + ch(b"hello") + b"\0\0",
        "two_early": b"\x4f" + ch(b"abc") + ch(b"x" * 300) + b"\0\0",
        "max": b"\xe3" + ch(b"m" * 16382) + b"\0\0",
        "over": b"\x30" + b"\x3f\xff" + b"y" * 20,
        "mid_chunk": b"\x30" + b"\0\x10" + b"short",
        "no_end": b"\x30" + ch(b"abc"),
        "half_len": b"\x30" + ch(b"abc") + b"\0",
        "after_end": b"\x32" + ch(b"req") + b"\0\0" + b"\x03next hdr",
        "offer_after": b"\x30" + b"\0\0\xff\xff",
        "zero_input": b"\x00",
    }


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--out", default=os.path.join(here, "corpus"))
    a = ap.parse_args()
    for harness, seeds in (("tun", tun_seeds()), ("conf", CONF_SEEDS),
                           ("header", header_seeds()),
                           ("frame", frame_seeds()),
                           ("trojan", trojan_seeds()),
                           ("resp", resp_seeds()),
                           ("socks5", socks5_seeds()),
                           ("dns", dns_seeds()),
                           ("sniff", sniff_seeds()),
                           ("dnsstream", dnsstream_seeds()),
                           ("chunks", chunks_seeds())):
        d = os.path.join(a.out, harness)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds.items():
            if isinstance(data, str):
                data = data.encode()
            with open(os.path.join(d, "seed_" + name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
