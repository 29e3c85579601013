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
# their ClientHello); prints "<request bytes> <response bytes>" and fails
# unless the body is the file.
fetch() {
	ip netns exec "$NS_C" timeout 15 "$TS_PY" - "$TS_T_ADDR4" \
	    "$TS_HTTP_PORT" "$TS_TMP/www/f" <<'EOF'
import hashlib, socket, sys
host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
req = b"GET /f HTTP/1.0\r\nHost: target\r\n\r\n"
s = socket.create_connection((host, port), timeout=10)
s.sendall(req)
resp = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    resp += b
body = resp.partition(b"\r\n\r\n")[2]
want = open(path, "rb").read()
if hashlib.sha256(body).digest() != hashlib.sha256(want).digest():
    print("body of %d bytes is not the file" % len(body))
    sys.exit(1)
print(len(req), len(resp))
EOF
}

# capture NAME: FLOWS fetches, hash-checked, under the sniffer; the records
# in $TS_TMP/NAME.json, the fetches' byte counts in NAME.sizes.
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

# check NAME PAD: the records of every flow, exact (PAD 0) or padded.
check() {
	"$TS_PY" - "$TS_TMP/$1.json" "$2" "$TS_TMP/$1.sizes" <<'EOF'
import json, sys
path, pad, sizes = sys.argv[1], int(sys.argv[2]), sys.argv[3]
HDR_LO, HDR_HI, TAG = 256, 511, 17
fetches = [tuple(map(int, l.split())) for l in open(sizes)]
req, resp = fetches[0]
if any(f != fetches[0] for f in fetches):
    print("BAD the fetches' sizes differ: %s" % fetches)
    sys.exit(1)
# nginx writes its headers, then the body (sendfile): one read or two.
whole, alone = 1 + resp + TAG, 1 + TAG
conns = [json.loads(l) for l in open(path)]
heads, shapes, bad, together_n, exact_n = [], [], [], 0, 0
for c in conns:
    recs = c["records"]
    cli = [ln for d, t, ln in recs if d == "c" and t == 23]
    srv = [ln for d, t, ln in recs if d == "s" and t == 23]
    # The client's records: its TLS Finished (< 100 bytes), the header
    # (with the request, or followed by it), its close_notify (19).
    data = [ln for ln in cli if ln >= 100]
    if not data:
        continue        # a pool connection that carried no flow
    heads.append(data[0])
    shapes.append(srv)
    if pad == 0:
        together = req + TAG not in cli
        lo, hi = HDR_LO + TAG, HDR_HI + TAG
        if together:
            lo, hi = lo + req, hi + req
        if not lo <= data[0] <= hi:
            bad.append("%s: header record of %d bytes, not %d..%d"
                       % (c["client"], data[0], lo, hi))
        if not together:
            continue    # nothing came with the header: status alone
        together_n += 1
        if alone in srv:
            bad.append("%s: a %d-byte server record (status alone): %s"
                       % (c["client"], alone, srv))
        # The status in the record of nginx's first bytes: their
        # plaintexts (records - 17 each) add up to 1 + the response.
        tail = [ln for ln in srv if ln > alone]
        k = len(tail)
        sums = {sum(tail[i:j]) - TAG * (j - i) for i in range(k)
                for j in range(i + 1, k + 1)}
        if 1 + resp not in sums:
            bad.append("%s: no records holding exactly the status and the "
                       "%d-byte response: %s" % (c["client"], resp, srv))
    else:
        # Random padding of 1..1024 bytes: a record as long as its exact
        # content (the whole response with the status) is a 1-in-1024
        # coincidence; the header record is unpadded at most 607 bytes.
        if whole in srv:
            exact_n += 1
        # The header record is short (< 512 bytes of content) or not:
        # either way it leaves 512 + 1..1024 bytes long or longer.
        if data[0] < 512 + 1 + TAG:
            bad.append("%s: header record of %d bytes, below the padding "
                       "floor" % (c["client"], data[0]))
        if alone in srv:
            bad.append("%s: an unpadded %d-byte record: %s"
                       % (c["client"], alone, srv))
if pad == 0 and together_n == 0:
    bad.append("no request left with its header: nothing to coalesce with")
if pad != 0:
    if exact_n > 1:
        bad.append("%d flows have an unpadded %d-byte response record"
                   % (exact_n, whole))
    if max(heads or [0]) <= HDR_HI + req + TAG:
        bad.append("no header record longer than its longest unpadded "
                   "form (%d): %s" % (HDR_HI + req + TAG, heads))
if len(heads) != len(fetches):
    bad.append("%d flows on the wire, %d fetches" % (len(heads), len(fetches)))
if len(set(heads)) < 2:
    bad.append("every header record is %s bytes: no random padding" % heads)
print("client records with the header: %s (request %d bytes%s)" % (
    heads, req, ", %d of %d with it" % (together_n, len(heads))
    if pad == 0 else ""))
print("server records of the first flow (TLS handshake, tickets, "
      "response, close): %s (response %d bytes)"
      % (shapes[0] if shapes else None, resp))
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
check nopad 0 >"$TS_TMP/nopad.txt" 2>&1 || {
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
    cli = [ln for d, t, ln in c["records"] if d == "c" and t == 23]
    srv = [ln for d, t, ln in c["records"] if d == "s" and t == 23]
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
check pad 8 >"$TS_TMP/pad.txt" 2>&1 || {
	cat "$TS_TMP/pad.txt"
	ts_fail "default padding: $(grep -m 1 BAD "$TS_TMP/pad.txt")"
}
ts_log "padding 8: $(head -n 2 "$TS_TMP/pad.txt" | tr '\n' ' ')"
ts_pass "headers padded to 256..511 bytes, status coalesced with the first reply (TCP and UDP, no 18-byte record), both records padded by default"
