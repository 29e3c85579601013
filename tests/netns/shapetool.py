#!/usr/bin/env python3
"""TLS record lengths on the wire, as a passive observer sees them (the
e2e_shape test).

  shapetool.py sniff IFACE PORT OUT SECONDS
      captures the TCP segments to and from PORT on IFACE (AF_PACKET, run
      it inside the namespace) for SECONDS or until SIGTERM, reassembles
      each connection's two byte streams and writes OUT: one JSON object
      per connection, {"client": "ip:port", "records": [[dir, type,
      length, time], ...]} with dir "c" (client to server) or "s", time
      the CLOCK_MONOTONIC seconds its first byte was seen, records in
      the order of the streams, each direction kept in sequence and the
      two merged by the time their first byte was seen.  Prints "ready"
      once capturing.

Standard library only; IPv4, Ethernet framing (veth).
"""

import json
import signal
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003


class Stream:
    def __init__(self):
        self.base = None        # sequence number of the first byte
        self.segs = {}          # offset -> (bytes, time)

    def add(self, seq, data, syn, now):
        if syn:
            self.base = (seq + 1) & 0xffffffff
            return
        if not data:
            return
        if self.base is None:
            self.base = seq
        off = (seq - self.base) & 0xffffffff
        if off > 1 << 30:       # before the base: a retransmission
            return
        old = self.segs.get(off)
        if old is None or len(old[0]) < len(data):
            self.segs[off] = (data, now if old is None else old[1])

    def bytes_and_times(self):
        """The contiguous stream from its start, and per byte offset the
        time the segment carrying it was first seen (sparse: by segment)."""
        out = bytearray()
        times = []
        for off in sorted(self.segs):
            data, t = self.segs[off]
            if off > len(out):
                break           # a hole: stop there
            if off + len(data) <= len(out):
                continue
            times.append((len(out), t))
            out += data[len(out) - off:]
        return bytes(out), times


def records(data, times):
    out, i = [], 0
    while i + 5 <= len(data):
        typ, _ver, ln = struct.unpack_from("!BHH", data, i)
        if i + 5 + ln > len(data):
            break
        t = 0.0
        for off, tt in times:
            if off <= i:
                t = tt
        out.append((t, typ, ln))
        i += 5 + ln
    return out


def sniff(iface, port, path, seconds):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                      socket.htons(ETH_P_ALL))
    s.bind((iface, 0))
    s.settimeout(0.2)
    conns = {}
    stop = [False]

    def on_term(*_):
        stop[0] = True
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    print("ready", flush=True)
    end = time.monotonic() + seconds
    while not stop[0] and time.monotonic() < end:
        try:
            pkt = s.recv(262144)
        except socket.timeout:
            continue
        except InterruptedError:
            continue
        now = time.monotonic()
        if len(pkt) < 14 + 20 or struct.unpack_from("!H", pkt, 12)[0] != 0x0800:
            continue
        ip = pkt[14:]
        ihl = (ip[0] & 0x0f) * 4
        total = struct.unpack_from("!H", ip, 2)[0]
        if ip[9] != 6:
            continue
        src, dst = socket.inet_ntoa(ip[12:16]), socket.inet_ntoa(ip[16:20])
        tcp = ip[ihl:total] if total else ip[ihl:]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack_from("!HHI", tcp, 0)
        doff = (tcp[12] >> 4) * 4
        syn = bool(tcp[13] & 0x02)
        data = tcp[doff:]
        if dport == port:
            key, d = "%s:%d" % (src, sport), "c"
        elif sport == port:
            key, d = "%s:%d" % (dst, dport), "s"
        else:
            continue
        c = conns.setdefault(key, {"c": Stream(), "s": Stream(),
                                   "first": now})
        c[d].add(seq, data, syn, now)
    s.close()
    with open(path, "w") as f:
        for key, c in sorted(conns.items(), key=lambda kv: kv[1]["first"]):
            merged = []
            for d in ("c", "s"):
                data, times = c[d].bytes_and_times()
                for k, (t, typ, ln) in enumerate(records(data, times)):
                    merged.append((t, d, k, typ, ln))
            merged.sort(key=lambda r: (r[0], r[1] != "c", r[2]))
            json.dump({"client": key,
                       "records": [[d, typ, ln, round(t, 6)]
                                   for t, d, _, typ, ln in merged]}, f)
            f.write("\n")


def main(argv):
    if len(argv) == 6 and argv[1] == "sniff":
        sniff(argv[2], int(argv[3]), argv[4], float(argv[5]))
        return 0
    print(__doc__, file=sys.stderr)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
