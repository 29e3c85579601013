#!/usr/bin/env python3
"""leaksniff.py: log every IP packet a namespace sends on chosen interfaces.

Usage: leaksniff.py --out FILE --iface eth0 --iface lan0 [--seconds N]

Runs in the namespace whose physical interfaces are watched (ip netns exec),
on one AF_PACKET socket; only packets the host sends (PACKET_OUTGOING) are
logged, one line each, flushed at once:

    IFACE PROTO SRC DST SPORT DPORT [dns QNAME QTYPE]

PROTO is tcp, udp, icmp, icmp6 or the IP protocol number; SPORT and DPORT
are 0 where there are none (ICMP: DPORT is the ICMP type).  A UDP or TCP
packet to or from port 53 that holds a DNS message carries its first
question (lower case, QTYPE a number).  "ready" goes to stdout once the
socket is bound; SIGTERM stops it.
"""
import argparse
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def qname(msg):
    """The first question of a DNS message: (name, qtype) or None."""
    if len(msg) < 12 or struct.unpack_from("!H", msg, 4)[0] < 1:
        return None
    i, labels = 12, []
    while i < len(msg):
        n = msg[i]
        if n == 0:
            i += 1
            break
        if n & 0xc0 or i + 1 + n > len(msg):
            return None
        labels.append(msg[i + 1:i + 1 + n].decode("ascii", "replace"))
        i += 1 + n
    if i + 2 > len(msg):
        return None
    return ".".join(labels).lower() or ".", struct.unpack_from("!H", msg, i)[0]


def describe(ifname, pkt):
    if len(pkt) < 14:
        return None
    et = struct.unpack_from("!H", pkt, 12)[0]
    ip = pkt[14:]
    if et == 0x0800 and len(ip) >= 20:
        ihl = (ip[0] & 0x0f) * 4
        proto = ip[9]
        src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        total = struct.unpack_from("!H", ip, 2)[0]
        l4 = ip[ihl:total] if total else ip[ihl:]
        frag = struct.unpack_from("!H", ip, 6)[0] & 0x1fff
        if frag:
            l4 = b""
    elif et == 0x86dd and len(ip) >= 40:
        proto = ip[6]
        src = socket.inet_ntop(socket.AF_INET6, ip[8:24])
        dst = socket.inet_ntop(socket.AF_INET6, ip[24:40])
        l4 = ip[40:40 + struct.unpack_from("!H", ip, 4)[0]]
    else:
        return None
    name = {6: "tcp", 17: "udp", 1: "icmp", 58: "icmp6"}.get(proto, str(proto))
    sport = dport = 0
    extra = ""
    if proto in (6, 17) and len(l4) >= 8:
        sport, dport = struct.unpack_from("!HH", l4, 0)
        if proto == 17:
            data = l4[8:]
        else:
            data = l4[(l4[12] >> 4) * 4:] if len(l4) >= 20 else b""
            data = data[2:] if len(data) > 2 else b""
        if 53 in (sport, dport) and data:
            q = qname(data)
            if q:
                extra = " dns %s %d" % q
    elif proto in (1, 58) and l4:
        dport = l4[0]
    return "%s %s %s %s %d %d%s" % (ifname, name, src, dst, sport, dport,
                                    extra)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True)
    p.add_argument("--iface", action="append", required=True)
    p.add_argument("--seconds", type=float, default=300)
    a = p.parse_args()
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_ALL))
    s.settimeout(0.2)
    stop = [False]

    def on_term(*_):
        stop[0] = True
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    end = time.monotonic() + a.seconds
    with open(a.out, "a", buffering=1) as out:
        print("ready", flush=True)
        while not stop[0] and time.monotonic() < end:
            try:
                pkt, addr = s.recvfrom(65600)
            except (socket.timeout, InterruptedError):
                continue
            if addr[0] not in a.iface or addr[2] != PACKET_OUTGOING:
                continue
            line = describe(addr[0], pkt)
            if line:
                out.write(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
