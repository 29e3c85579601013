#!/usr/bin/env python3
"""JSON side of bench/run.sh: turns one measurement into a result line, and
a run's result lines into the results file and its tables.

  report.py iperf   META-JSON IPERF-JSON [LINKEM-JSON]  -> one result line
  report.py ttfb    META-JSON SAMPLES-FILE [LINKEM-JSON]
  report.py ping    META-JSON PING-OUTPUT  [LINKEM-JSON]
  report.py udp     META-JSON IPERF-JSON   [LINKEM-JSON]
  report.py final   RESULTS-JSONL RUN-META-JSON OUT-JSON  -> tables (markdown)
  report.py tables  OUT-JSON                              -> tables again

A result line is a JSON object; "value" is what the progress line shows.
Failures are recorded, never turned into numbers.
"""

import json
import math
import re
import statistics
import sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def linkem_summary(path):
    """The counters of one counting period, trimmed to what the tables use."""
    st = load(path) if path else None
    if not st:
        return None
    out = {"seconds": st.get("seconds")}
    for key in ("a_to_b", "b_to_a"):
        d = st.get(key, {})
        out[key] = {k: d.get(k) for k in (
            "rx_pkts", "fwd_pkts", "queue_drop_pkts", "loss_pkts", "loss_pct",
            "ring_drop_pkts", "write_err_pkts", "queue_max_bytes",
            "late_mean_us", "late_p99_us", "late_max_us")}
    return out


def quantile(xs, p):
    """Nearest-rank quantile: p99 of 20 samples is the largest."""
    xs = sorted(xs)
    return xs[max(0, math.ceil(p * len(xs)) - 1)]


def cmd_iperf(meta, ipath, lpath=None):
    r = dict(meta)
    d = load(ipath)
    if d is None or "error" in d or "end" not in d:
        r["error"] = (d or {}).get("error", "no iperf3 result")
        r["value"] = "FAILED: " + r["error"]
    else:
        end = d["end"]
        r["mbit"] = round(end["sum_received"]["bits_per_second"] / 1e6, 2)
        r["retransmits"] = end.get("sum_sent", {}).get("retransmits")
        r["sender_cc"] = end.get("sender_tcp_congestion")
        r["receiver_cc"] = end.get("receiver_tcp_congestion")
        r["value"] = "%.2f Mbit/s (retr %s, cc %s)" % (
            r["mbit"], r["retransmits"], r["sender_cc"])
    r["linkem"] = linkem_summary(lpath)
    return r


def cmd_udp(meta, ipath, lpath=None):
    r = dict(meta)
    d = load(ipath)
    if d is None or "error" in d or "end" not in d:
        r["error"] = (d or {}).get("error", "no iperf3 result")
        r["value"] = "FAILED: " + r["error"]
    else:
        s = d["end"]["sum"]
        st = d["end"]["streams"][0]["udp"]
        # The sum is the sender's view; what arrived is what counts.
        r["mbit"] = round((s["packets"] - s["lost_packets"]) * 8 *
                          (s["bytes"] / max(s["packets"], 1)) /
                          s["seconds"] / 1e6, 2)
        r["packets"] = s["packets"]
        r["lost_packets"] = s["lost_packets"]
        r["lost_pct"] = round(s["lost_percent"], 3)
        # The client's stream counts only its own side; the receiver's
        # out-of-order count is in the server's text (--get-server-output).
        m = re.search(r"(\d+) datagrams received out-of-order",
                      d.get("server_output_text", ""))
        r["out_of_order"] = int(m.group(1)) if m else st.get("out_of_order")
        r["value"] = "%.2f Mbit/s received, %d packets, %.3f %% lost, " \
            "%s out of order" % (r["mbit"], r["packets"], r["lost_pct"],
                                 r["out_of_order"])
    r["linkem"] = linkem_summary(lpath)
    return r


def cmd_ttfb(meta, spath, lpath=None):
    r = dict(meta)
    conn, first, fails = [], [], 0
    with open(spath) as f:
        for line in f:
            p = line.split()
            if len(p) != 3 or p[2] != "200":
                fails += 1
                continue
            conn.append(float(p[0]) * 1e3)
            first.append(float(p[1]) * 1e3)
    r["n"], r["failed"] = len(first), fails
    if first:
        r["connect_ms_median"] = round(statistics.median(conn), 1)
        r["ttfb_ms_median"] = round(statistics.median(first), 1)
        r["ttfb_ms_p99"] = round(quantile(first, 0.99), 1)
        r["ttfb_ms_samples"] = [round(x, 2) for x in first]
        r["value"] = "connect %.1f ms, first byte median %.1f p99 %.1f ms " \
            "(n=%d, failed %d)" % (r["connect_ms_median"],
                                   r["ttfb_ms_median"], r["ttfb_ms_p99"],
                                   len(first), fails)
    else:
        r["error"] = "no successful request"
        r["value"] = "FAILED: all %d requests failed" % fails
    r["linkem"] = linkem_summary(lpath)
    return r


def cmd_ping(meta, ppath, lpath=None):
    r = dict(meta)
    with open(ppath) as f:
        text = f.read()
    m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", text)
    n = re.search(r"(\d+) packets transmitted, (\d+) received", text)
    if not m or not n:
        r["error"] = "no ping summary"
        r["value"] = "FAILED"
    else:
        r["rtt_min_ms"], r["rtt_avg_ms"], r["rtt_max_ms"], r["rtt_mdev_ms"] = \
            (float(x) for x in m.groups())
        r["sent"], r["received"] = int(n.group(1)), int(n.group(2))
        r["value"] = "rtt min/avg/max/mdev %.3f/%.3f/%.3f/%.3f ms " \
            "(configured %s ms)" % (r["rtt_min_ms"], r["rtt_avg_ms"],
                                    r["rtt_max_ms"], r["rtt_mdev_ms"],
                                    r.get("rtt_configured_ms"))
    r["linkem"] = linkem_summary(lpath)
    return r


# ---- tables ---------------------------------------------------------------

def fmt(x):
    if x is None:
        return "n/a"
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.2g" % x if x < 1 else "%.1f" % x


def updown(rs, **sel):
    def pick(direction):
        for r in rs:
            if r.get("dir") == direction and all(
                    r.get(k) == v for k, v in sel.items()):
                return "FAILED" if "error" in r else fmt(r.get("mbit"))
        return "n/a"
    return "%s / %s" % (pick("up"), pick("down"))


def table(head, rows):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


PATH_NAMES = {"direct": "direct", "openvpn": "OpenVPN-TCP",
              "tunsplit": "tunsplit (warm pool)",
              "tunsplit-nopool": "tunsplit (no pool)"}


def tables(doc):
    rs = doc["results"]
    meta = doc["meta"]
    out = []

    ceil = [r for r in rs if r["scenario"] == "ceiling"]
    if ceil:
        rows = []
        for link in ("veth", "linkem"):
            for flows in sorted({r["flows"] for r in ceil}):
                if any(r["link"] == link for r in ceil):
                    rows.append([link if link == "veth" else
                                 "linkem, no impairment", flows,
                                 updown(ceil, link=link, flows=flows)])
        out.append("### Ceiling (no impairment, %s, Mbit/s up / down)\n\n" %
                   meta.get("ceiling_cc", "cubic") +
                   table(["link", "flows", "Mbit/s"], rows))

    lfl = [r for r in rs if r["scenario"] == "lfl" and r["kind"] == "iperf"]
    if lfl:
        cols = []
        for path in ("direct", "openvpn", "tunsplit"):
            for cc in ("cubic", "bbr"):
                if any(r["path"] == path and r["cc"] == cc for r in lfl):
                    cols.append((path, cc))
        for flows in sorted({r["flows"] for r in lfl}):
            rows = []
            for loss in sorted({r["loss"] for r in lfl}):
                rows.append(["%g %%" % loss] + [
                    updown(lfl, path=p, cc=c, loss=loss, flows=flows)
                    for p, c in cols])
            out.append(
                "### Long fat lossy path: %s Mbit/s, RTT %s ms, %s ms queue, "
                "%d flow%s (Mbit/s up / down)\n\n" % (
                    meta["rate_mbit"], meta["rtt_ms"], meta["queue_ms"],
                    flows, "s" if flows > 1 else "") +
                table(["loss"] + ["%s %s" % (PATH_NAMES[p], c.upper())
                                  for p, c in cols], rows))

    tt = [r for r in rs if r["kind"] == "ttfb"]
    if tt:
        rows = []
        for r in tt:
            if "error" in r:
                rows.append([PATH_NAMES[r["path"]], "FAILED", "", "", ""])
            else:
                rows.append([PATH_NAMES[r["path"]], r["connect_ms_median"],
                             r["ttfb_ms_median"], r["ttfb_ms_p99"], r["n"]])
        out.append(
            "### New connection: connect to first response byte "
            "(RTT %s ms, %s, ms)\n\n" % (meta["rtt_ms"], "1 KiB over HTTP") +
            table(["path", "connect median", "first byte median",
                   "first byte p99", "n"], rows))

    acc = accuracy_rows(rs)
    if acc:
        out.append("### linkem accuracy\n\n" + table(
            ["check", "configured", "measured"], acc))
    return "\n\n".join(out)


def accuracy_rows(rs):
    rows = []
    for r in rs:
        if r["kind"] == "ping" and "error" not in r:
            rows.append(["ping RTT (%s)" % r["link_args"],
                         "%s ms" % r["rtt_configured_ms"],
                         "min %.3f avg %.3f mdev %.3f ms" % (
                             r["rtt_min_ms"], r["rtt_avg_ms"],
                             r["rtt_mdev_ms"])])
    for r in rs:
        if r["kind"] == "udp" and "error" not in r:
            le = (r.get("linkem") or {}).get("a_to_b") or {}
            rows.append(["UDP %s (%s)" % (r["check"], r["link_args"]),
                         r["expect"],
                         "%.2f Mbit/s, loss %.3f %% (linkem %.3f %%), "
                         "%s out of order" % (
                             r["mbit"], r["lost_pct"],
                             le.get("loss_pct") or 0, r["out_of_order"])])
    # Realised random loss over every impaired TCP run, per setting.
    by_loss = {}
    for r in rs:
        if r["kind"] != "iperf" or r["scenario"] != "lfl" or not r["linkem"]:
            continue
        for k in ("a_to_b", "b_to_a"):
            d = r["linkem"][k]
            passed = d["rx_pkts"] - d["queue_drop_pkts"] - d["ring_drop_pkts"]
            t = by_loss.setdefault(r["loss"], [0, 0, 0.0, 0.0])
            t[0] += d["loss_pkts"]
            t[1] += passed
            t[2] = max(t[2], d["late_p99_us"] or 0)
            t[3] = max(t[3], d["late_max_us"] or 0)
    for loss, (lost, passed, p99, mx) in sorted(by_loss.items()):
        rows.append(["random loss over all %g %% runs" % loss, "%g %%" % loss,
                     "%.3f %% of %d packets; lateness p99 <= %.0f us, "
                     "max %.1f ms" % (100.0 * lost / passed if passed else 0,
                                      passed, p99, mx / 1e3)])
    return rows


def cmd_final(jsonl, meta_path, out_path):
    with open(jsonl) as f:
        results = [json.loads(line) for line in f if line.strip()]
    doc = {"meta": load(meta_path), "results": results}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(tables(doc))


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd in ("iperf", "udp", "ttfb", "ping"):
        meta = json.loads(args[0])
        fn = {"iperf": cmd_iperf, "udp": cmd_udp, "ttfb": cmd_ttfb,
              "ping": cmd_ping}[cmd]
        r = fn(meta, *args[1:])
        print(json.dumps(r))
    elif cmd == "final":
        cmd_final(*args)
    elif cmd == "tables":
        print(tables(load(args[0])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
