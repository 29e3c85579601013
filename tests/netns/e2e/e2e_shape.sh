#!/bin/bash
# The shape of a flow on the wire, as a passive observer between client
# and server sees it: TLS record lengths, captured on the server's veth by
# tests/netns/shapetool.py (AF_PACKET, streams reassembled).
#
# Flows fetch a 100-byte file from nginx on the target, over plain HTTP
# through the tunnel, writing the request the moment connect() returns (so
# the client sends it with the request header, mostly: see below).  With record
# padding off (padding: 0 on both sides) the lengths are exact:
#   - the client's first data record is header + request + 17 bytes: the
#     header is padded to 256..511 bytes whatever the destination
#     (unpadded it would be 77 bytes), and varies from flow to flow;
#   - the server's OK status leaves in the record of nginx's first bytes:
#     1 + response + 17 bytes (or 1 + headers + 17 when nginx's body
#     comes in a later segment), and never in an 18-byte record alone.
# With the default padding (8 records each way) neither record has its
# exact length: both are padded, and a short one (the header record) to at
# least 512 + 1 bytes of content.  A flow whose request left after the
# header on its own (the client waits 10 ms for an app's first bytes) gets
# its status alone, by design; most flows must not.
#
# Connections are reused (doc/PROTOCOL.md, "Reusable connections"): the
# flows share a connection, their bytes in chunks of [len:2] + bytes, and
# the check splits each connection into its flows (see check()); the
# lengths above grow by the 2-byte chunk length there, and every flow's
# first records are padded, not only the connection's first; a flow's
# end marker leaves with the server's last bytes when nginx's close came
# with them (no 19-byte marker record of its own).  A third
# pass with the client's reuse: 1 keeps the one-flow-per-connection,
# version 2 shape covered.
#
# Same topology as lib.sh (client tsc, server tss, target tst).
. "$(dirname "$0")/../lib.sh"
ts_init e2e_shape

ST=$TS_LIB_DIR/shapetool.py
FLOWS=${TS_SHAPE_FLOWS:-8}

ts_topology_up
ts_make_pki
mkdir -p "$TS_TMP/www"
head -c 100 /dev/urandom >"$TS_TMP/www/f"
ts_start_http "$TS_TMP/www"
ts_start_udpecho 7
ts_prove_no_forward "$TS_HTTP_PORT"

stop_both() {
	kill -TERM "$TS_CLIENT_PID" "$TS_SERVER_PID" 2>/dev/null
	wait "$TS_CLIENT_PID" "$TS_SERVER_PID" 2>/dev/null
	ip -n "$NS_C" route del "$TS_T_NET4" dev "$TS_TUN" 2>/dev/null
	ip -n "$NS_C" -6 route del "$TS_T_NET6" dev "$TS_TUN" 2>/dev/null
}

# fetch: one HTTP/1.0 GET of /f from nginx through the tunnel, as a client
# that writes its request the moment connect() returns (as browsers write
# their ClientHello); prints "<request bytes> <response bytes> <start>"
# (start: CLOCK_MONOTONIC seconds before connect(), which the sniffer's
# record times share, to tell a reused connection's flows apart) and fails
# unless the body is the file.  It lingers 50 ms after its close so the
# flow's end markers and the server's offer are on the wire before the
# next fetch starts.
fetch() {
	ip netns exec "$NS_C" timeout 15 "$TS_PY" - "$TS_T_ADDR4" \
	    "$TS_HTTP_PORT" "$TS_TMP/www/f" <<'EOF'
import hashlib, socket, sys, time
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
req = b"GET /f HTTP/1.0\r\nHost: target\r\n\r\n"
t0 = time.monotonic()
s = socket.create_connection((host, port), timeout=10)
s.sendall(req)
resp = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    resp += b
s.close()
body = resp.partition(b"\r\n\r\n")[2]
want = open(path, "rb").read()
if hashlib.sha256(body).digest() != hashlib.sha256(want).digest():
    print("body of %d bytes is not the file" % len(body))
    sys.exit(1)
print(len(req), len(resp), "%.6f" % t0)
time.sleep(0.05)
EOF
}

# capture NAME: FLOWS fetches, hash-checked, under the sniffer; the records
# in $TS_TMP/NAME.json, the fetches' byte counts and start times in
# NAME.sizes.
capture() {
	local name=$1 i
	ts_bg "$NS_S" "sniff-$name" "$TS_PY" -u "$ST" sniff eth0 \
	    "$TS_SERVER_PORT" "$TS_TMP/$name.json" 60
	SNIFF_PID=$TS_LAST_PID
	ts_wait_log "$TS_TMP/sniff-$name.log" ready ||
	    ts_fail "sniffer did not start: $(cat "$TS_TMP/sniff-$name.log")"
	: >"$TS_TMP/$name.sizes"
	for i in $(seq "$FLOWS"); do
		fetch >>"$TS_TMP/$name.sizes" 2>&1 ||
		    ts_fail "$name fetch $i: $(tail -n 1 "$TS_TMP/$name.sizes")"
	done
	# Let the last closes cross the wire before the sniffer stops.
	sleep 0.5
	kill -TERM "$SNIFF_PID"
	wait "$SNIFF_PID" 2>/dev/null
	[ -s "$TS_TMP/$name.json" ] || ts_fail "$name: nothing captured"
}

# check NAME PAD REUSE: the records of every flow, exact (PAD 0) or
# padded; REUSE 1: one flow per connection, version 2 (no framing), else
# at least one connection must carry several flows.
#
# A connection's flows: its client's first application-data record is its
# TLS Finished; each flow starts with the client's header record, the
# first client record sent after that flow's fetch started.  Framing
# (doc/PROTOCOL.md, "Reusable connections"): a version 2 flow (one per
# connection; the first flow to a server, which asks with the reuse tag,
# or any with reuse: 1) sends raw bytes; on a version 3 connection (the
# later ones) every flow's bytes go in chunks of [len:2] + bytes, one
# record each, so the client's request record is 2 + request + 17, the
# server's status record 1 + 2 + response + 17, and each direction ends
# with an end marker, the client's a 19-byte record (2 + 17), the
# server's with the offer behind it (2 + 2 + 17, or 4 more bytes in the
# record of its last chunk).  A connection with one flow may be either:
# both are tried.
check() {
	"$TS_PY" - "$TS_TMP/$1.json" "$2" "$TS_TMP/$1.sizes" "$3" <<'EOF'
import json, sys
path, pad, sizes, reuse = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
    int(sys.argv[4])
HDR_LO, HDR_HI, TAG, CHUNK = 256, 511, 17, 2
fetches = [tuple(map(float, l.split())) for l in open(sizes)]
starts = sorted(f[2] for f in fetches)
req, resp = int(fetches[0][0]), int(fetches[0][1])
if any(f[:2] != fetches[0][:2] for f in fetches):
    print("BAD the fetches' sizes differ: %s" % fetches)
    sys.exit(1)
alone = 1 + TAG
conns = [json.loads(l) for l in open(path)]

def flows_of(recs):
    """The connection's flows: lists of (dir, length), the first with
    the records before it (handshake, tickets)."""
    data = [k for k, r in enumerate(recs) if r[0] == "c" and r[1] == 23][1:]
    cuts = []
    for i, t0 in enumerate(starts):
        t1 = starts[i + 1] if i + 1 < len(starts) else float("inf")
        first = [k for k in data if t0 <= recs[k][3] < t1]
        if first:
            cuts.append(first[0])
    cuts.append(len(recs))
    return [[(d, ln) for d, t, ln, _ in recs[0 if n == 0 else cuts[n]:
                                             cuts[n + 1]] if t == 23]
            for n in range(len(cuts) - 1)]

def exact(c, n, cli, srv, frame):
    """Errors of a flow at padding 0, its data framed (frame: 2 bytes of
    chunk length per record) or not, and whether the request came with
    the header."""
    bad = []
    together = frame + req + TAG not in cli[1:]
    lo, hi = HDR_LO + TAG, HDR_HI + TAG
    if together:
        lo, hi = lo + frame + req, hi + frame + req
    if not lo <= cli[0] <= hi:
        bad.append("%s flow %d: header record of %d bytes, not %d..%d"
                   % (c, n, cli[0], lo, hi))
    if not together:
        return bad, False, False    # nothing came with it: status alone
    if alone in srv:
        bad.append("%s flow %d: a %d-byte server record (status alone): %s"
                   % (c, n, alone, srv))
    # The status in the record of nginx's first bytes (nginx writes its
    # headers, then the body: one read or two): their plaintexts (records
    # - 17 - the chunk length each) add up to 1 + the response, or 2 more
    # with the server's end marker (4 with the offer behind it), which
    # leaves in the record of the last chunk when nginx's close came with
    # its last bytes.
    tail = [ln for ln in srv if ln > TAG + CHUNK]
    k = len(tail)
    sums = {sum(tail[i:j]) - (TAG + frame) * (j - i) for i in range(k)
            for j in range(i + 1, k + 1)}
    # 2: the marker with the offer behind it, 1: the marker alone.
    merged = 0 if frame == 0 or 1 + resp in sums else \
        2 if 1 + resp + 4 in sums else 1 if 1 + resp + 2 in sums else 0
    if 1 + resp not in sums and not merged:
        bad.append("%s flow %d: no records holding exactly the status and "
                   "the %d-byte response: %s" % (c, n, resp, srv))
    # Then no marker record of its own, nor an offer's after the marker
    # that carried one (the offer alone is a 19-byte record).
    if merged and srv.count(TAG + CHUNK) > 2 - merged:
        bad.append("%s flow %d: the end marker (and offer) left with the "
                   "response and again on its own: %s" % (c, n, srv))
    return bad, True, merged

heads, shapes, bad, together_n, exact_n, nflows = [], [], [], 0, 0, []
merged_n = offered_n = 0
for c in conns:
    flows = flows_of(c["records"])
    if not flows:
        continue        # a pool connection that carried no flow
    nflows.append(len(flows))
    if reuse == 1 and len(flows) > 1:
        bad.append("%s: %d flows on one connection with reuse: 1"
                   % (c["client"], len(flows)))
    for n, f in enumerate(flows):
        cli = [ln for d, ln in f if d == "c"]
        srv = [ln for d, ln in f if d == "s"]
        if n == 0:
            cli = cli[1:]       # the TLS Finished
        heads.append(cli[0])
        shapes.append(srv)
        if pad == 0:
            # Unframed (version 2) only as a connection's only flow.
            frames = [0] if reuse == 1 else [CHUNK] if len(flows) > 1 \
                else [0, CHUNK]
            tries = [exact(c["client"], n, cli, srv, fr) for fr in frames]
            ok = [t for t in tries if not t[0]]
            if not ok:
                bad.extend(tries[-1][0])
            elif ok[0][1]:
                together_n += 1
                merged_n += ok[0][2] > 0
                offered_n += ok[0][2] == 2
            continue
        # Random padding of 1..1024 bytes: a record as long as its exact
        # content (the whole response with the status) is a 1-in-1024
        # coincidence; the header record is unpadded at most 609 bytes.
        if {1 + resp + TAG, 1 + CHUNK + resp + TAG} & set(srv):
            exact_n += 1
        # Every flow's first records are padded, a reused connection's
        # later flows as its first: the header record, short (< 512
        # bytes of content) or not, leaves 512 + 1..1024 bytes long or
        # longer, and no status alone.  (TAG counts the content type
        # byte, which is among the 512 + 1: the least is 512 + TAG, one
        # padded record in 1,024.)
        if cli[0] < 512 + TAG:
            bad.append("%s flow %d: header record of %d bytes, below the "
                       "padding floor" % (c["client"], n, cli[0]))
        if alone in srv:
            bad.append("%s flow %d: an unpadded %d-byte record: %s"
                       % (c["client"], n, alone, srv))
        # Its few records all count among the first: each, end markers
        # and the offer included, padded to 513 bytes with its type or more
        # (the connection's TLS handshake and tickets before its first
        # flow aside, and the close_notify after its last).
        seen = cli + (srv if n > 0 else [])
        if n == len(flows) - 1:
            seen = cli[:-1] + (srv[:-1] if n > 0 else []) + \
                [ln for ln in (cli[-1:] + srv[-1:]) if ln != 19]
        if min(seen) < 512 + TAG:
            bad.append("%s flow %d: a record below the padding floor: "
                       "client %s, server %s" % (c["client"], n, cli, srv))
if pad == 0 and together_n == 0:
    bad.append("no request left with its header: nothing to coalesce with")
# nginx closes right after its last write: on a reused connection the end
# marker of most flows leaves with it (a flow whose close came later has
# one of its own, by design); not in one of them is a regression.
if pad == 0 and reuse != 1 and merged_n == 0:
    bad.append("no flow's end marker left with its last bytes")
# ...and with it the offer (PROTOCOL.md, "The offer"): nginx's close
# comes before the client's.
if pad == 0 and reuse != 1 and offered_n == 0:
    bad.append("no flow's offer left with its end marker")
if pad != 0:
    if exact_n > 1:
        bad.append("%d flows have an unpadded response record" % exact_n)
    if max(heads or [0]) <= HDR_HI + CHUNK + req + TAG:
        bad.append("no header record longer than its longest unpadded "
                   "form (%d): %s" % (HDR_HI + CHUNK + req + TAG, heads))
if reuse != 1 and max(nflows or [0]) < 2:
    bad.append("no connection carried more than one flow: %s" % nflows)
if len(heads) != len(fetches):
    bad.append("%d flows on the wire, %d fetches" % (len(heads), len(fetches)))
if len(set(heads)) < 2:
    bad.append("every header record is %s bytes: no random padding" % heads)
print("client records with the header: %s (request %d bytes%s), flows "
      "per connection %s, %d end markers with the last bytes (%d with "
      "the offer)" % (heads, req, ", %d of %d with it" % (together_n,
      len(heads)) if pad == 0 else "", nflows, merged_n, offered_n))
print("server records of the first flows (TLS handshake, tickets, "
      "response, end): %s (response %d bytes)" % (shapes[:3], resp))
for b in bad:
    print("BAD " + b)
sys.exit(1 if bad else 0)
EOF
}

# 1. Record padding off: exact lengths.
ts_write_configs "  pool: 1
  padding: 0" "  padding: 0"
ts_start_server
ts_start_client
capture nopad
check nopad 0 0 >"$TS_TMP/nopad.txt" 2>&1 || {
	cat "$TS_TMP/nopad.txt"
	ts_fail "padding 0: $(grep -m 1 BAD "$TS_TMP/nopad.txt")"
}
ts_log "padding 0: $(head -n 2 "$TS_TMP/nopad.txt" | tr '\n' ' ')"
# A UDP association (a 100-byte datagram echoed: frames of 2 + 1 + 4 + 2
# + 100 bytes): its status leaves with the echo's frame, 1 + 109 + 17.
ts_bg "$NS_S" sniff-udp "$TS_PY" -u "$ST" sniff eth0 "$TS_SERVER_PORT" \
    "$TS_TMP/udp.json" 60
SNIFF_PID=$TS_LAST_PID
ts_wait_log "$TS_TMP/sniff-udp.log" ready || ts_fail "sniffer did not start"
ts_udptool "$TS_TMP/udp.log" echo --host "$TS_T_ADDR4" --port 7 \
    --sizes 100 || ts_fail "UDP echo: $(tail -n 1 "$TS_TMP/udp.log")"
sleep 0.5
kill -TERM "$SNIFF_PID"
wait "$SNIFF_PID" 2>/dev/null
"$TS_PY" - "$TS_TMP/udp.json" >"$TS_TMP/udp.txt" 2>&1 <<'EOF' || {
import json, sys
frame = 2 + 1 + 4 + 2 + 100
for l in open(sys.argv[1]):
    c = json.loads(l)
    cli = [ln for d, t, ln, _ in c["records"] if d == "c" and t == 23]
    srv = [ln for d, t, ln, _ in c["records"] if d == "s" and t == 23]
    if not [ln for ln in cli if ln >= 100]:
        continue
    print("association: client %s, server %s" % (cli, srv))
    if 18 in srv or 1 + frame + 17 not in srv:
        print("BAD no %d-byte record with the status and the echo: %s"
              % (1 + frame + 17, srv))
        sys.exit(1)
    sys.exit(0)
print("BAD no association on the wire")
sys.exit(1)
EOF
	cat "$TS_TMP/udp.txt"
	ts_fail "UDP: $(grep -m 1 BAD "$TS_TMP/udp.txt")"
}
ts_log "padding 0, UDP: $(cat "$TS_TMP/udp.txt")"
stop_both

# 2. The default record padding.
ts_write_configs "  pool: 1"
ts_start_server
ts_start_client
capture pad
check pad 8 0 >"$TS_TMP/pad.txt" 2>&1 || {
	cat "$TS_TMP/pad.txt"
	ts_fail "default padding: $(grep -m 1 BAD "$TS_TMP/pad.txt")"
}
ts_log "padding 8: $(head -n 2 "$TS_TMP/pad.txt" | tr '\n' ' ')"
stop_both

# 3. Padding off, a client that does not reuse connections (reuse: 1):
# version 2, one flow per connection, unframed.
ts_write_configs "  pool: 1
  reuse: 1
  padding: 0" "  padding: 0"
ts_start_server
ts_start_client
capture noreuse
check noreuse 0 1 >"$TS_TMP/noreuse.txt" 2>&1 || {
	cat "$TS_TMP/noreuse.txt"
	ts_fail "reuse 1: $(grep -m 1 BAD "$TS_TMP/noreuse.txt")"
}
ts_log "padding 0, reuse 1: $(head -n 2 "$TS_TMP/noreuse.txt" | tr '\n' ' ')"
ts_pass "headers padded to 256..511 bytes, status coalesced with the first reply (TCP and UDP, no 18-byte record), both records padded by default, on reused connections (every flow) and not"
