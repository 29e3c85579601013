#!/bin/bash
# A closed port on the target: the app's connection must fail with a reset
# (or refusal) within 2 s, and the tunnel must keep working afterwards.
. "$(dirname "$0")/../lib.sh"
ts_init e2e_refused

closed=9999
ts_standard_setup

ip netns exec "$NS_T" ss -Hltn "sport = :$closed" | grep -q . &&
    ts_fail "port $closed is open on the target"
out=$TS_TMP/apps.log
TS_APP_TIMEOUT=30
for host in "$TS_T_ADDR4" "$TS_T_ADDR6"; do
	ts_app refused --host "$host" --port "$closed" --within 2 >>"$out" 2>&1 ||
	    ts_fail "$host:$closed: $(tail -n 1 "$out")"
	ts_log "$host:$closed: $(tail -n 1 "$out")"
done
# A refused target must not have hurt anything: a normal flow still works.
ts_app send --host "$TS_T_ADDR4" --port "$TS_TARGET_PORT" --bytes 1m \
    --seed 3 >>"$out" 2>&1 || ts_fail "flow after refusal: $(tail -n 1 "$out")"
ts_check_alive
ts_pass "closed port reset within 2 s (v4 and v6); later flow intact"
