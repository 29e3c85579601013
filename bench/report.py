#!/usr/bin/env python3
"""JSON side of bench/run.sh: turns one measurement into a result line, and
a run's result lines into the results file and its tables.

  report.py iperf   META-JSON IPERF-JSON [LINKEM-JSON]  -> one result line
  report.py ttfb    META-JSON SAMPLES-FILE [LINKEM-JSON]
  report.py ping    META-JSON PING-OUTPUT  [LINKEM-JSON]
  report.py udp     META-JSON IPERF-JSON   [LINKEM-JSON]
  report.py rrlat   META-JSON RRLAT-JSON RRLAT-STDERR [LINKEM-JSON]
  report.py connrate META-JSON CONNS-JSON CONNS-STDERR
  report.py burst   META-JSON CONNS-JSON CONNS-STDERR [LINKEM-JSON]
  report.py idle    META-JSON FLOWS-JSON FLOWS-STDERR
  report.py final   RESULTS-JSONL RUN-META-JSON OUT-JSON  -> tables (markdown)
                    (also OUT.<scenario>.json, one per scenario)
  report.py tables  OUT-JSON                              -> tables again
  report.py readme  OUT-JSON [OUT-JSON...] [doc/PERFORMANCE.md]
                    -> the generated part of doc/PERFORMANCE.md (printed,
                    or replaced between the bench markers in the .md file
                    given); several runs each get a heading, in the order
                    given

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
        # The app's (iperf3 client's) MSS as its kernel reports it on the
        # control connection, which takes the same route as the data.
        st = d.get("start", {})
        r["app_mss"] = st.get("tcp_mss_default", st.get("tcp_mss"))
        r["value"] = "%.2f Mbit/s (retr %s, cc %s)" % (
            r["mbit"], r["retransmits"], r["sender_cc"])
        # iperf3's own CPU, percent of one CPU over its test: the app
        # (iperf3 -c) and the target (iperf3 -s).
        cu = end.get("cpu_utilization_percent", {})
        if "host_total" in cu:
            r["cpu_app_pct"] = round(cu["host_total"], 1)
            r["cpu_target_pct"] = round(cu.get("remote_total", 0), 1)
        # CPU was counted over the whole run, omitted seconds included, so
        # it is divided by every byte of every interval.
        moved = sum(i["sum"]["bytes"] for i in d.get("intervals", []))
        r["bytes_all"] = moved
        for side in ("client", "server"):
            cpu = meta.get("cpu_%s_s" % side)
            if cpu is not None and moved:
                r["cpu_%s_s_per_gib" % side] = round(cpu / (moved / 2**30), 2)
        if "cpu_client_s_per_gib" in r:
            r["value"] += ", CPU s/GiB client %s server %s" % (
                r["cpu_client_s_per_gib"], r.get("cpu_server_s_per_gib"))
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


def err_tail(path):
    try:
        with open(path) as f:
            lines = [x.strip() for x in f if x.strip()]
        return lines[-1][:200] if lines else None
    except OSError:
        return None


def tool_result(meta, jpath, epath, none="no result"):
    """The result line of a tool's one line of JSON: (result, the tool's
    JSON), or (failed result, None) with the last line of its stderr."""
    r = dict(meta)
    d = load(jpath)
    if not d:
        r["error"] = err_tail(epath) or none
        r["value"] = "FAILED: " + r["error"]
        return r, None
    r.update(d)
    return r, d


def cmd_rrlat(meta, jpath, epath, lpath=None):
    r, d = tool_result(meta, jpath, epath, "no rrlat result")
    if d:
        r["value"] = "%s loop%s: %d answered, p50 %.2f p99 %.2f p99.9 " \
            "%.2f max %.2f ms%s" % (
                d["mode"], " at %g/s" % d["rate"] if d["rate"] else "",
                d["answered"], d["p50_us"] / 1e3, d["p99_us"] / 1e3,
                d["p999_us"] / 1e3, d["max_us"] / 1e3,
                ", %d unanswered" % d["unanswered"] if d["unanswered"]
                else "")
        if d["unanswered"]:
            r["error"] = "%d requests unanswered" % d["unanswered"]
    r["linkem"] = linkem_summary(lpath)
    return r


def cmd_connrate(meta, jpath, epath):
    r, d = tool_result(meta, jpath, epath)
    if d:
        per_k(r)
        r["value"] = "%.0f new connections/s (%d in %.1f s, %d failed)" % (
            d["per_second"], d["connections"], d["seconds"], d["failed"])
        if "p50_ms" in d:
            r["value"] += ", median %.2f ms per GET" % d["p50_ms"]
        if r.get("cpu_server_s_per_1k") is not None:
            r["value"] += ", server CPU %.0f ms per 1,000" % (
                1e3 * r["cpu_server_s_per_1k"])
        if d["failed"]:
            r["error"] = "%d connections failed" % d["failed"]
    return r


def per_k(r):
    """CPU seconds of the path's daemons per 1,000 connections."""
    for side in ("client", "server"):
        c = r.get("cpu_%s_s" % side)
        if c is not None and r.get("connections"):
            r["cpu_%s_s_per_1k" % side] = round(
                c * 1000 / r["connections"], 4)


def cmd_burst(meta, jpath, epath, lpath=None):
    r, d = tool_result(meta, jpath, epath)
    if d:
        per_k(r)
        r["value"] = "%d connections of %d B each way in %.3f s " \
            "(per connection median %.0f max %.0f ms, %d failed)" % (
                d["connections"], d["bytes_each_way"], d["seconds"],
                d["p50_ms"], d["max_ms"], d["failed"])
        if d["failed"]:
            r["error"] = "%d connections failed" % d["failed"]
    r["linkem"] = linkem_summary(lpath)
    return r


def cmd_idle(meta, jpath, epath):
    r = dict(meta)
    d = load(jpath)
    if not d or "error" in d:
        r["error"] = (d or {}).get("error") or err_tail(epath) or "no result"
        r["value"] = "FAILED: " + r["error"]
        return r
    r["rss_kib_before"] = d["rss_kib_before"]
    r["steps"] = d["steps"]
    parts = []
    for st in d["steps"]:
        n = st["flows"]
        st["bytes_per_flow"] = {}
        for side, kib in st["rss_kib"].items():
            k0 = d["rss_kib_before"].get(side)
            if kib is not None and k0 is not None:
                st["bytes_per_flow"][side] = round((kib - k0) * 1024 / n)
        parts.append("%d flows (open in %.1f s): %s" % (
            n, st["open_seconds"], ", ".join(
                "%s %+d KiB = %s B/flow" % (
                    side, st["rss_kib"][side] - d["rss_kib_before"][side],
                    st["bytes_per_flow"][side])
                for side in st["bytes_per_flow"])))
    if "rss_kib_after" in d:
        # Memory after a burst: before the flows, the peak, 3 s and
        # after_s s after they all closed, and after / before.
        r["return"] = {}
        for side, k0 in d["rss_kib_before"].items():
            k1 = d["rss_kib_after"].get(side)
            if k0 is None or k1 is None:
                continue
            r["return"][side] = {
                "before_kib": k0, "peak_kib": d["hwm_kib"].get(side),
                "after_3s_kib": d["rss_kib_after_3s"].get(side),
                "after_kib": k1, "after_s": d["after_s"],
                "ratio": round(k1 / k0, 3) if k0 else None}
        parts.append("RSS after they closed: %s" % ", ".join(
            "%s %d -> peak %s -> %d KiB %g s later (%.2fx)" % (
                side, v["before_kib"], v["peak_kib"], v["after_kib"],
                v["after_s"], v["ratio"] or 0)
            for side, v in r["return"].items()))
    r["value"] = "; ".join(parts)
    return r


def return_cell(rs):
    """RSS after the idle flows closed / before them, client / server."""
    out = []
    for side in ("client", "server"):
        xs = [r["return"][side]["ratio"] for r in rs
              if side in r.get("return", {})]
        if not xs:
            out.append("n/a")
        elif len(xs) == 1:
            out.append("%.2fx" % xs[0])
        else:
            out.append("%.2fx (%.2f–%.2f)" % (statistics.median(xs),
                                               min(xs), max(xs)))
    return " / ".join(out)


# ---- tables ---------------------------------------------------------------

def fmt(x):
    if x is None:
        return "n/a"
    if x >= 100:
        return "%.0f" % x
    if x >= 10:
        return "%.1f" % x
    return "%.2g" % x if x < 1 else "%.1f" % x


def sel(rs, **kw):
    return [r for r in rs if all(r.get(k) == v for k, v in kw.items())]


def ok_mbits(rs, **kw):
    return [r["mbit"] for r in sel(rs, **kw)
            if "error" not in r and r.get("mbit") is not None]


def mbit(rs, **kw):
    """The matching results' median Mbit/s (several seeds) or the one
    result's; None when missing or all failed."""
    ok = ok_mbits(rs, **kw)
    return statistics.median(ok) if ok else None


def cell(rs, **kw):
    """One value, or the median (min–max) over seeds."""
    m = sel(rs, **kw)
    if not m:
        return "–"
    ok = ok_mbits(rs, **kw)
    if not ok:
        return "FAILED"
    fails = len(m) - len(ok)
    return med_range(ok) + (" (%d failed)" % fails if fails else "")


def updown(rs, **kw):
    return "%s / %s" % (cell(rs, dir="up", **kw), cell(rs, dir="down", **kw))


def ratio(a, b):
    return "n/a" if a is None or not b else "%.2f" % (a / b)


def table(head, rows):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


PATH_NAMES = {"direct": "direct", "openvpn": "OpenVPN-TCP",
              "v2ray": "v2ray VLESS+TLS", "kcptun": "kcptun fast3",
              "tunsplit": "tunsplit", "tunsplit-nopool": "tunsplit, no pool",
              "tunsplit-nooffload": "tunsplit, offloads off",
              "tunsplit-w1": "tunsplit, 1 server worker",
              "tunsplit-noreuse": "tunsplit, no reuse",
              "tunsplit-cw1": "tunsplit, 1 client worker",
              "tunsplit-cw2": "tunsplit, 2 client workers",
              "tunsplit-socks5": "tunsplit SOCKS5 to danted"}
TPUT_COLS = [("direct", "cubic"), ("direct", "bbr"), ("openvpn", "bbr"),
             ("v2ray", "bbr"), ("kcptun", "bbr"), ("tunsplit", "bbr")]
PATH_ORDER = ["direct", "openvpn", "v2ray", "kcptun", "tunsplit",
              "tunsplit-w1", "tunsplit-noreuse", "tunsplit-nooffload",
              "tunsplit-cw1", "tunsplit-cw2", "tunsplit-socks5",
              "tunsplit-nopool"]

# The link's MTU (veth's and linkem's default): the MTU of every path but
# tunsplit in the runs that predate the "mtu" field of a result.
LINK_MTU = 1500


def is_ts(path):
    return path.startswith("tunsplit")


def with_mtu(rs, meta):
    """The results, each with its "mtu": the MTU of the interface the
    client namespace routes the target through (tunsplit: its TUN).  Runs
    before run.sh recorded it had tunsplit at the run's one TUN MTU and
    the others on the link (1500)."""
    out = []
    for r in rs:
        if r.get("mtu") is None:
            r = dict(r, mtu=meta.get("tunsplit_mtu", 9000)
                     if is_ts(r.get("path", "")) else LINK_MTU)
        out.append(r)
    return out


def path_mtus(rs, path):
    """tunsplit's TUN MTUs among these results, largest first; [None] for
    another path (one MTU, the link's or its tunnel's, given in the
    table's MTU line)."""
    if not is_ts(path):
        return [None]
    return sorted({r["mtu"] for r in sel(rs, path=path)}, reverse=True)


def ckw(path, cc=None, mtu=None):
    """Selection of one column or row: tunsplit's carry their MTU."""
    kw = {"path": path}
    if cc is not None:
        kw["cc"] = cc
    if mtu is not None:
        kw["mtu"] = mtu
    return kw


def col_name(path, cc, mtu=None):
    if path == "direct":
        return "direct %s" % cc.upper()
    if path == "kcptun":
        return PATH_NAMES[path]
    if mtu is not None:
        return "%s (%s, MTU %s)" % (PATH_NAMES[path], cc.upper(), mtu)
    return "%s (%s)" % (PATH_NAMES[path], cc.upper())


def mtu_note(rs):
    """One line naming the MTU of every path in a table."""
    by = {}
    for r in rs:
        by.setdefault(r["path"], set()).add(r["mtu"])
    groups = []	# [mtus, [names]] in path order, paths with equal MTUs merged
    for p in sorted(by, key=lambda x: PATH_ORDER.index(x)
                    if x in PATH_ORDER else 99):
        m = sorted(by[p], reverse=True)
        for g in groups:
            if g[0] == m:
                g[1].append(PATH_NAMES.get(p, p))
                break
        else:
            groups.append([m, [PATH_NAMES.get(p, p)]])
    parts = ["%s for %s%s" % (" and ".join(str(x) for x in m),
                              and_list(names),
                              " (as each column or row says)"
                              if len(m) > 1 else "")
             for m, names in groups]
    return ("MTU of the interface the app's route takes (the link, "
            "OpenVPN's or tunsplit's TUN): %s." % "; ".join(parts)
            if parts else "")


def t_ceiling(rs, meta):
    ceil = sel(rs, scenario="ceiling")
    if not ceil:
        return None
    rows = []
    for link in ("veth", "linkem"):
        for flows in sorted({r["flows"] for r in ceil}):
            if sel(ceil, link=link, flows=flows):
                rows.append([link if link == "veth" else
                             "linkem, no impairment", flows,
                             updown(ceil, link=link, flows=flows)])
    return ("### Ceiling: no impairment, %s, Mbit/s up / down\n\n" %
            meta.get("ceiling_cc", "cubic").upper() + mtu_note(ceil) +
            "\n\n" + table(["link", "flows", "Mbit/s"], rows))


def cpu_cell(rs, side, **kw):
    """CPU seconds per GiB up / down: the median over repeats."""
    vals = []
    for d in ("up", "down"):
        v = [r.get("cpu_%s_s_per_gib" % side) for r in sel(rs, dir=d, **kw)
             if "error" not in r]
        v = [x for x in v if x is not None]
        vals.append("%.2f" % statistics.median(v) if v else "n/a")
    return " / ".join(vals)


def runs_text(rs, meta):
    """How the cells with several runs came about."""
    seeds = sorted({r["seed"] for r in rs if r.get("seed") is not None})
    rounds = meta.get("rounds", 1)
    if rounds > 1:
        return (" Each cell ran once in each of %d rounds of the plan "
                "(interleaved with the other cells)%s: median (min–max)." %
                (rounds, ", loss seeds %s" % ", ".join(str(x) for x in seeds)
                 if seeds else ""))
    if len(seeds) > 1:
        return (" Cells with more than one run: median (min–max) over "
                "seeds %s (one %s-s run is one draw of whether BBR meets "
                "an early loss burst); ratios are of the medians." % (
                    ", ".join(str(x) for x in seeds),
                    meta.get("iperf_seconds", "?")))
    return ""


def t_tunnels(rs, meta):
    sc = sel(rs, scenario="scale", kind="iperf")
    if not sc:
        return None
    mss = any(r.get("app_mss") for r in sc)
    rows = []
    for path in ("direct", "openvpn", "v2ray", "kcptun", "tunsplit",
                 "tunsplit-nooffload"):
        for mtu in path_mtus(sc, path):
            kw = ckw(path, mtu=mtu)
            m = sel(sc, **kw)
            if not m:
                continue
            row = [PATH_NAMES[path], " / ".join(sorted(
                {str(r["mtu"]) for r in m}, reverse=True))]
            if mss:
                row.append(" / ".join(sorted({str(r["app_mss"]) for r in m
                                              if r.get("app_mss")})) or "n/a")
            rows.append(row + [
                updown(sc, **kw), " / ".join(ratio(
                    mbit(sc, dir=d, **kw), mbit(sc, path="direct", dir=d))
                    for d in ("up", "down")),
                cpu_cell(sc, "client", **kw), cpu_cell(sc, "server", **kw)])
    return ("### Through each tunnel over a plain veth (no impairment, 1 "
            "flow, %s s): Mbit/s and CPU seconds per GiB, up / down\n\n" %
            meta.get("short_seconds", "") + mtu_note(sc) +
            (" App MSS: the iperf3 client's, as its kernel reports it "
             "(direct: less 12 bytes of timestamps)." if mss else "") +
            runs_text(sc, meta) + "\n\n" +
            table(["path", "MTU"] + (["app MSS"] if mss else []) +
                  ["Mbit/s", "/ direct", "client CPU s/GiB",
                   "server CPU s/GiB"], rows))


def lfl_cols(lfl):
    """(path, cc, mtu) of the columns: tunsplit once per TUN MTU."""
    return [(p, c, m) for p, c in TPUT_COLS for m in path_mtus(lfl, p)
            if sel(lfl, **ckw(p, c, m))]


def t_lfl(rs, meta):
    lfl = sel(rs, scenario="lfl", kind="iperf")
    out = []
    for flows in sorted({r["flows"] for r in lfl}):
        fl = sel(lfl, flows=flows)
        cols = lfl_cols(fl)
        head = ["loss"] + [col_name(*col) for col in cols]
        ts = [m for p, c, m in cols if p == "tunsplit" and c == "bbr"]
        refs = [(p, c) for p, c in (("direct", "bbr"), ("openvpn", "bbr"))
                if (p, c, None) in cols]
        for m in ts:
            name = "tunsplit" if len(ts) == 1 else "tunsplit %s" % m
            head += ["%s / %s" % (name, "direct BBR" if p == "direct"
                                  else PATH_NAMES[p]) for p, c in refs]
        head += ["tunsplit %s / %s" % (m, ts[0]) for m in ts[1:]]
        rows = []
        for loss in sorted({r["loss"] for r in fl}):
            row = ["%g %%" % loss] + [updown(fl, loss=loss, **ckw(*col))
                                      for col in cols]
            pairs = [(ckw("tunsplit", "bbr", m), ckw(p, c))
                     for m in ts for p, c in refs]
            pairs += [(ckw("tunsplit", "bbr", m), ckw("tunsplit", "bbr", ts[0]))
                      for m in ts[1:]]
            for a, b in pairs:
                row.append(" / ".join(ratio(
                    mbit(fl, loss=loss, dir=d, **a),
                    mbit(fl, loss=loss, dir=d, **b))
                    for d in ("up", "down")))
            rows.append(row)
        multi = runs_text(fl, meta)
        out.append(
            "### Long fat lossy path: %s Mbit/s, RTT %s ms, %s ms queue, "
            "%d flow%s, Mbit/s up / down\n\n%s%s\n\n" % (
                meta["rate_mbit"], meta["rtt_ms"], meta["queue_ms"],
                flows, "s" if flows > 1 else "", mtu_note(fl), multi) +
            table(head, rows))
    return "\n\n".join(out) if out else None


def t_kept(rs, meta):
    """Throughput kept under loss, relative to the same path at 0 %."""
    lfl = sel(rs, scenario="lfl", kind="iperf", flows=1)
    losses = sorted({r["loss"] for r in lfl})
    if 0 not in losses or len(losses) < 2:
        return None
    rows = []
    for col in lfl_cols(lfl):
        kw = ckw(*col)
        if not sel(lfl, loss=0, **kw):
            continue
        row = [col_name(*col)]
        for loss in losses[1:]:
            row.append(" / ".join(
                "n/a" if mbit(lfl, loss=0, dir=d, **kw) is None or
                mbit(lfl, loss=loss, dir=d, **kw) is None else
                "%.0f %%" % (100.0 * mbit(lfl, loss=loss, dir=d, **kw)
                             / mbit(lfl, loss=0, dir=d, **kw))
                for d in ("up", "down")))
        rows.append(row)
    return ("### What loss costs each path: throughput kept, relative to "
            "the same path at 0 % loss (1 flow, medians, up / down)\n\n" +
            mtu_note(lfl) + "\n\n" +
            table(["path"] + ["%g %%" % x for x in losses[1:]], rows))


def med_range(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return "n/a"
    if len(vals) == 1:
        return fmt(vals[0])
    return "%s (%s–%s)" % (fmt(statistics.median(vals)), fmt(min(vals)),
                           fmt(max(vals)))


def t_hiloss(rs, meta):
    hl = sel(rs, scenario="hiloss", kind="iperf")
    if not hl:
        return None
    rows = []
    for p, c, mtu in [(p, c, m) for p, c in TPUT_COLS
                      for m in path_mtus(hl, p)]:
        m = sel(hl, **ckw(p, c, mtu))
        if not m:
            continue
        row = [col_name(p, c, mtu)]
        for d in ("up", "down"):
            vals = [None if "error" in r else r["mbit"]
                    for r in sel(m, dir=d)]
            fails = sum(1 for v in vals if v is None)
            row.append(med_range(vals) + (" (%d failed)" % fails
                                          if fails else ""))
        rows.append(row)
    seeds = sorted({r["seed"] for r in hl})
    once = [PATH_NAMES[p] for p in sorted({r["path"] for r in hl})
            if len({r["seed"] for r in sel(hl, path=p)}) == 1 < len(seeds)]
    return ("### High loss: %g %% random loss, same link, 1 flow, median "
            "(min–max) over seeds %s%s, Mbit/s\n\n" % (
                hl[0]["loss"], ", ".join(str(x) for x in seeds),
                " (%s: the first only)" % ", ".join(once) if once else "") +
            mtu_note(hl) + "\n\n" + table(["path", "up", "down"], rows))


def t_targets(rs, meta):
    lfl = sel(rs, scenario="lfl", kind="iperf", flows=1)
    if not sel(lfl, path="tunsplit"):
        return None
    rows = []
    for mtu in path_mtus(lfl, "tunsplit"):
        ts = ckw("tunsplit", mtu=mtu)
        name = "tunsplit (MTU %s)" % mtu
        for loss in sorted({r["loss"] for r in lfl}):
            goal = 0.85 if loss >= 5 else 0.9
            for d in ("up", "down"):
                t = mbit(lfl, loss=loss, dir=d, **ts)
                b = mbit(lfl, path="direct", cc="bbr", loss=loss, dir=d)
                if t is None or not b:
                    continue
                rows.append(["%s ≥ %.2f× direct BBR, %g %% %s" % (
                    name, goal, loss, d), "%.2f×" % (t / b),
                    "yes" if t / b >= goal else "**no**",
                    "%s vs %s" % (
                        cell(lfl, loss=loss, dir=d, **ts),
                        cell(lfl, path="direct", cc="bbr", loss=loss,
                             dir=d))])
        for d in ("up", "down"):
            t = mbit(lfl, loss=1, dir=d, **ts)
            o = mbit(lfl, path="openvpn", loss=1, dir=d)
            if t is not None and o:
                rows.append(["%s ≥ 2.5× OpenVPN-TCP, 1 %% %s" % (name, d),
                             "%.2f×" % (t / o),
                             "yes" if t / o >= 2.5 else "**no**",
                             "%s vs %s" % (
                                 cell(lfl, loss=1, dir=d, **ts),
                                 cell(lfl, path="openvpn", loss=1, dir=d))])
    return ("### The issue's targets in this run (1 flow; ratio of the "
            "medians where a cell has several runs)\n\n" +
            mtu_note(lfl) + "\n\n" +
            table(["target", "measured", "met",
                   "Mbit/s: tunsplit vs reference, median (min–max)"],
                  rows)) if rows else None


def t_ttfb(rs, meta):
    tt = sel(rs, kind="ttfb", scenario="ttfb")
    if not tt:
        return None
    rows = []
    for r in tt:
        if "error" in r:
            rows.append([PATH_NAMES[r["path"]], "FAILED", "", "", "", ""])
        else:
            rows.append([PATH_NAMES[r["path"]], r["connect_ms_median"],
                         r["ttfb_ms_median"], r["ttfb_ms_p99"],
                         "%.2f" % (r["ttfb_ms_median"] / meta["rtt_ms"]),
                         r["n"]])
    return ("### New connection: connect to first response byte (RTT %s ms, "
            "1 KiB over HTTP, ms)\n\n" % meta["rtt_ms"] + mtu_note(tt) +
            "\n\n" + table(["path", "connect median", "first byte median",
                   "first byte p99", "RTTs", "n"], rows))


def ms(us):
    return "n/a" if us is None else "%.1f" % (us / 1e3)


def t_rrlat(rs, meta):
    rr = sel(rs, kind="rrlat")
    if not rr:
        return None
    out = []
    for loss in sorted({r["loss"] for r in rr}):
        rows = []
        for path in ("direct", "openvpn", "v2ray", "kcptun", "tunsplit"):
            m = sel(rr, path=path, loss=loss)
            if not m:
                continue
            row = [PATH_NAMES[path]]
            for mode in ("closed", "open"):
                x = [r for r in m if (r["rr_rate"] > 0) == (mode == "open")]
                if not x or "p50_us" not in x[0]:
                    row += ["FAILED" if x else "n/a", "", ""]
                    continue
                r = x[0]
                row += [ms(r["p50_us"]), ms(r["p99_us"]),
                        ms(r["p999_us"]) if mode == "open" else
                        str(r["answered"])]
                if mode == "open" and r.get("unanswered"):
                    row[-1] += " (%d unanswered)" % r["unanswered"]
            rows.append(row)
        rate = max(r["rr_rate"] for r in rr)
        out.append(
            "### Request latency on an open connection: 64-byte echo, RTT "
            "%s ms, %g %% loss, ms\n\n" % (rr[0]["rtt_ms"], loss) +
            mtu_note(sel(rr, loss=loss)) + "\n\n" + table(["path", "closed p50", "closed p99", "closed n",
                   "open %g/s p50" % rate, "open p99", "open p99.9"], rows))
    return "\n\n".join(out)


def cpu_med(rs, side, **kw):
    v = [r.get("cpu_%s_s_per_gib" % side) for r in sel(rs, **kw)
         if "error" not in r]
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def t_offload(rs, meta):
    """tunsplit with the TUN's offloads on against off, cell by cell."""
    sc = sel(rs, scenario="scale", kind="iperf")
    if not sel(sc, path="tunsplit-nooffload"):
        return None
    rows = []
    for mtu in path_mtus(sc, "tunsplit-nooffload"):
        for d in ("up", "down"):
            on = dict(path="tunsplit", mtu=mtu, dir=d)
            off = dict(path="tunsplit-nooffload", mtu=mtu, dir=d)
            c_on, c_off = (cpu_med(sc, "client", **on),
                           cpu_med(sc, "client", **off))
            rows.append([mtu, d, cell(sc, **on), cell(sc, **off),
                         ratio(mbit(sc, **on), mbit(sc, **off)),
                         "n/a" if c_on is None else "%.2f" % c_on,
                         "n/a" if c_off is None else "%.2f" % c_off,
                         ratio(c_on, c_off)])
    return ("### TUN offloads on / off (plain veth, no impairment, 1 flow, "
            "%s s)\n\n" % meta.get("short_seconds", "") +
            "tunsplit with `tun.offload: on` (TSO and checksum offload "
            "through virtio-net headers) and `off`, each on-cell followed "
            "by its off-cell." + runs_text(sc, meta) + "  Ratios are of "
            "the medians; client CPU is the tunsplit client's, seconds "
            "per GiB moved.\n\n" +
            table(["TUN MTU", "dir", "on Mbit/s", "off Mbit/s", "on / off",
                   "client CPU s/GiB on", "off", "on / off"], rows))


def cpu_range(rs, side, **kw):
    """CPU seconds per GiB: median (min–max) over the repeats."""
    v = [r.get("cpu_%s_s_per_gib" % side) for r in sel(rs, **kw)
         if "error" not in r]
    v = [x for x in v if x is not None]
    if not v:
        return "n/a"
    if len(v) == 1:
        return "%.2f" % v[0]
    return "%.2f (%.2f–%.2f)" % (statistics.median(v), min(v), max(v))


def gbit_range(mbits):
    """Gbit/s: median (min–max) over the repeats."""
    v = [x / 1e3 for x in mbits]
    if not v:
        return "FAILED"
    if len(v) == 1:
        return "%.2f" % v[0]
    return "%.2f (%.2f–%.2f)" % (statistics.median(v), min(v), max(v))


def cw1_path(cw):
    """The one-worker path of cworkers cells: tunsplit-cw1, or in runs
    from before the client's default became one worker per CPU, plain
    tunsplit (then one worker)."""
    return "tunsplit-cw1" if sel(cw, path="tunsplit-cw1") else "tunsplit"


def t_cworkers(rs, meta):
    """Issue 19: the client's worker processes, 1 against 2, cell by
    cell: Gbit/s, CPU per GiB of both sides, the flows' split."""
    cw = sel(rs, scenario="cworkers", kind="iperf")
    if not cw:
        return None
    p1 = cw1_path(cw)
    rows = []
    for mtu in sorted({r["mtu"] for r in cw}, reverse=True):
        for flows in sorted({r["flows"] for r in cw}, reverse=True):
            for d in ("down", "up"):
                one = dict(path=p1, mtu=mtu, flows=flows, dir=d)
                two = dict(path="tunsplit-cw2", mtu=mtu, flows=flows, dir=d)
                if not sel(cw, **one) and not sel(cw, **two):
                    continue
                g1, g2 = mbit(cw, **one), mbit(cw, **two)
                c1, c2 = (cpu_med(cw, "client", **one),
                          cpu_med(cw, "client", **two))
                s1, s2 = (cpu_med(cw, "server", **one),
                          cpu_med(cw, "server", **two))
                split = ", ".join(
                    ":".join(str(x) for x in r["client_worker_flows"])
                    for r in sorted(sel(cw, **two),
                                    key=lambda x: x.get("round", 1))
                    if r.get("client_worker_flows")) or "n/a"
                rows.append([
                    mtu, flows, d,
                    gbit_range(ok_mbits(cw, **one)),
                    gbit_range(ok_mbits(cw, **two)),
                    ratio(g2, g1),
                    cpu_range(cw, "client", **one),
                    cpu_range(cw, "client", **two), ratio(c2, c1),
                    cpu_range(cw, "server", **one),
                    cpu_range(cw, "server", **two), ratio(s2, s1),
                    split, load_cell(cw, mtu=mtu, flows=flows, dir=d)])
    return ("### The client's worker processes: 1 against 2 (plain veth, "
            "no impairment, %s s)\n\n" % meta.get("short_seconds", "") +
            "tunsplit with `client.workers` %s (1 worker) and 2, each "
            "cell next to its pair (the 2-worker cell first in even "
            "rounds), the same server (`server.workers` %s)." % (
                meta.get("tunsplit_client_workers", "default"),
                meta.get("tunsplit_workers", "0")) +
            runs_text(cw, meta) + "  Gbit/s of iperf3 (`-P` flows); "
            "client CPU is every process of the client (worker 0 and "
            "its children), server CPU the server's, seconds per GiB "
            "moved; ratios are 2 workers / 1, of the medians.  Flows per "
            "worker: what each of the 2 workers took in the cell, per "
            "round, iperf3's control connection included.  Load: the "
            "1-minute load average at the cells' starts.\n\n" +
            table(["TUN MTU", "flows", "dir", "1 worker Gbit/s",
                   "2 workers Gbit/s", "2 / 1", "client CPU s/GiB, 1",
                   "2", "2 / 1", "server CPU s/GiB, 1", "2", "2 / 1",
                   "flows per worker (2)", "load"], rows))


def t_cworkers_cpu(rs, meta):
    """Where the machine's CPUs went in the cworkers cells: each side's
    share in cores (CPU seconds over the cell's seconds), medians."""
    cw = sel(rs, scenario="cworkers", kind="iperf")
    if not any(r.get("machine_busy_pct") is not None for r in cw):
        return None
    cpus = meta.get("cpus") or 1

    def cores(r, key):
        if r.get(key) is None or not r.get("seconds"):
            return None
        return r[key] / (r["seconds"] + r.get("omit", 0))

    def col(m, f):
        v = [f(r) for r in m if "error" not in r]
        v = [x for x in v if x is not None]
        return "%.2f" % statistics.median(v) if v else "n/a"
    rows = []
    for mtu in sorted({r["mtu"] for r in cw}, reverse=True):
        for flows in sorted({r["flows"] for r in cw}, reverse=True):
            for d in ("down", "up"):
                for path, n in ((cw1_path(cw), 1), ("tunsplit-cw2", 2)):
                    m = sel(cw, path=path, mtu=mtu, flows=flows, dir=d)
                    if not m:
                        continue
                    rows.append([
                        mtu, flows, d, n,
                        col(m, lambda r: r.get("machine_busy_pct", 0) *
                            cpus / 100 if r.get("machine_busy_pct")
                            is not None else None),
                        col(m, lambda r: cores(r, "cpu_client_s")),
                        col(m, lambda r: cores(r, "cpu_server_s")),
                        col(m, lambda r: r["cpu_app_pct"] / 100
                            if r.get("cpu_app_pct") is not None else None),
                        col(m, lambda r: r["cpu_target_pct"] / 100
                            if r.get("cpu_target_pct") is not None
                            else None)])
    return ("### Where the CPUs went in those cells (cores, medians)\n\n"
            "Busy: the whole machine's CPU time over the cell (%d CPUs; "
            "`/proc/stat`, all but idle and iowait: our processes, the "
            "kernel's softirqs charged to no process, and any other work "
            "on the machine); tunsplit's client (all its processes) and "
            "server from `/proc/PID/stat`; the app (`iperf3 -c`) and "
            "the target (`iperf3 -s`) as iperf3 reports its own CPU.  "
            "Cores: CPU seconds over the cell's seconds.\n\n" % cpus +
            table(["TUN MTU", "flows", "dir", "client workers", "busy",
                   "client", "server", "app", "target"], rows))


# Issue 19's external figures of hev-socks5-tunnel to dante (TUN MTU 8500
# and 1500, Gbit/s, measured elsewhere: hev is not packaged), by cell.
HEV_ISSUE = {(9000, 1, "up"): 2.48, (9000, 1, "down"): 2.34,
             (9000, 4, "down"): 2.88, (1500, 1, "up"): 1.68}


def round_ratio(rs, a, b):
    """a's Gbit/s over b's in the same round (the cells ran next to each
    other): median (min–max) over the rounds."""
    out = []
    for r in a:
        o = [x for x in b if x.get("round") == r.get("round") and
             "error" not in x and x.get("mbit")]
        if "error" not in r and r.get("mbit") is not None and o:
            out.append(r["mbit"] / o[0]["mbit"])
    if not out:
        return "n/a"
    if len(out) == 1:
        return "%.2f" % out[0]
    return "%.2f (%.2f–%.2f)" % (statistics.median(out), min(out), max(out))


def t_hev(rs, meta):
    """Issue 19's table: direct veth, tunsplit's SOCKS5 outbound to
    danted (hev's job, no TLS), tunsplit native (TLS), cell by cell."""
    hv = sel(rs, scenario="hev", kind="iperf")
    if not hv:
        return None
    # How many client workers ran: status lists them when more than one.
    nw = sorted({len(r.get("client_worker_flows") or [0])
                 for r in hv if is_ts(r["path"])})
    rows = []
    cells = sorted({(r["mtu"], r["flows"], r["dir"])
                    for r in hv if is_ts(r["path"])},
                   key=lambda c: (-c[0], c[1], c[2] != "up"))
    for mtu, flows, d in cells:
        kw = dict(flows=flows, dir=d)
        nat = sel(hv, path="tunsplit", mtu=mtu, **kw)
        sox = sel(hv, path="tunsplit-socks5", mtu=mtu, **kw)
        dire = sel(hv, path="direct", cell_mtu=mtu, **kw) or \
            sel(hv, path="direct", **kw)
        g_nat = mbit(hv, path="tunsplit", mtu=mtu, **kw)
        ref = HEV_ISSUE.get((mtu, flows, d))
        rows.append([
            mtu, "%d flow%s %s" % (flows, "s" if flows > 1 else "", d)] + [
            gbit_range(ok_mbits(m)) if m else "–" for m in (dire, sox, nat)
        ] + [
            round_ratio(hv, nat, sox), round_ratio(hv, sox, dire),
            "n/a" if ref is None else "%.2f" % ref,
            "n/a" if ref is None or g_nat is None else
            "%.2f" % (g_nat / 1e3 / ref),
            cpu_range(nat, "client"), cpu_range(sox, "client"),
            cpu_range(nat, "server"), cpu_range(sox, "server"),
            load_cell(hv, flows=flows, dir=d, mtu=mtu)])
    return ("### Issue 19's table: native against the SOCKS5 stand-in "
            "(plain veth, no impairment, %s s)\n\n" %
            meta.get("short_seconds", "") +
            "Direct: the veth itself; socks5: the tunsplit client with "
            "`protocol: socks5` to danted in the server namespace (plain "
            "TCP, hev-socks5-tunnel's job without encryption: hev is not "
            "packaged); native: tunsplit with TLS to its server.  Each "
            "cell runs the three paths one after another, their order "
            "turning each round; both tunsplit paths run the same binary "
            "with `client.workers` %s (\"default\": the key left out), %s "
            "client worker process%s running, the server `server.workers` "
            "%s." % (meta.get("tunsplit_client_workers", "default"),
                     " or ".join(str(n) for n in nw),
                     "" if nw == [1] else "es",
                     meta.get("tunsplit_workers", "0")) +
            runs_text(hv, meta) + "  Gbit/s of iperf3 (`-P` flows, up: "
            "app to target); ratios: one path's Gbit/s over the other's in "
            "the same round, median (min–max) over the rounds.  hev: the "
            "issue's external figure (hev to dante, measured at TUN MTU "
            "8500 in the run the issue reports, not here), and native "
            "over it.  CPU: "
            "seconds per GiB moved, client every process of the tunsplit "
            "client, server the tunsplit server or danted (all its "
            "processes).  Load: the 1-minute load average at the cells' "
            "starts.\n\n" +
            table(["TUN MTU", "cell", "direct Gbit/s", "socks5 Gbit/s",
                   "native (TLS) Gbit/s", "native / socks5",
                   "socks5 / direct", "hev (issue)", "native / hev",
                   "client CPU s/GiB native", "socks5",
                   "server CPU s/GiB native", "danted", "load"], rows))


def t_scale(rs, meta):
    cr = sel(rs, kind="connrate", scenario="scale")
    idle = sel(rs, kind="idle", scenario="scale")
    if not cr and not idle:
        return None
    steps = sorted({st["flows"] for r in idle if "steps" in r
                    for st in r["steps"]})
    head = ["path", "new conn/s"] + [
        "RSS per idle flow at %d: client / server" % n for n in steps] + [
        "RSS after they closed / before: client / server"]
    rows = []
    for path in ("direct", "openvpn", "v2ray", "kcptun", "tunsplit",
                 "tunsplit-nopool"):
        c = sel(cr, path=path)
        i = sel(idle, path=path)
        if not c and not i:
            continue
        row = [PATH_NAMES[path],
               "n/a" if not c else "FAILED" if "per_second" not in c[0]
               else "%.0f" % c[0]["per_second"]]
        for n in steps:
            st = [x for r in i if "steps" in r for x in r["steps"]
                  if x["flows"] == n]
            if not st:
                row.append("–" if not i or "error" not in i[0]
                           else "FAILED")
                continue
            b = st[0]["bytes_per_flow"]
            row.append("%s / %s" % tuple(
                "n/a" if b.get(k) is None else
                "%.1f KB" % (b[k] / 1e3) for k in ("client", "server")))
        row.append(return_cell(i))
        rows.append(row)
    return ("### Connection rate and memory (plain veth, no impairment)\n\n"
            "New connections: sequential HTTP/1.0 GETs of 1 KiB %s.  "
            "Idle flows: TCP connections through the path to a holder on the "
            "target, one byte each, RSS growth of the path's client and "
            "server daemon 11 s after the last one opened; then all of "
            "them closed and the RSS read again 25 s later for tunsplit "
            "(5 s for the others), against the RSS before them.  "
            "%s\n\n" % (
                "(%s per cell, `bench/conns.c`)" % meta["conn_count"]
                if "conn_count" in meta else
                "for %s s" % meta.get("conn_seconds", "?"),
                mtu_note(cr + idle)) +
            table(head, rows))


def vals(rs, key, **kw):
    return [r[key] for r in sel(rs, **kw)
            if "error" not in r and r.get(key) is not None]


def med(xs):
    return statistics.median(xs) if xs else None


def short_paths(rs):
    return [p for p in PATH_ORDER if sel(rs, path=p)]


def paired_ratio(rs, key, path, **kw):
    """The median over the rounds of path's value / the direct path's in
    the same round: on a shared machine a round's load falls on both."""
    out = []
    for r in sel(rs, path=path, **kw):
        d = [x for x in sel(rs, path="direct", round=r.get("round"), **kw)
             if "error" not in x and x.get(key)]
        if "error" not in r and r.get(key) is not None and d:
            out.append(r[key] / d[0][key])
    return "n/a" if not out else "%.2f" % statistics.median(out) \
        if len(out) == 1 else "%.2f (%.2f–%.2f)" % (
            statistics.median(out), min(out), max(out))


def load_cell(rs, **kw):
    v = [r["load1"] for r in sel(rs, **kw) if r.get("load1") is not None]
    return "n/a" if not v else "%.0f–%.0f" % (min(v), max(v))


def t_short(rs, meta):
    """Issue 18: short and young flows, each tunsplit variant against the
    direct path of the same run (medians over the rounds)."""
    sh = sel(rs, scenario="short")
    if not sh:
        return None
    out = []
    cr = sel(sh, kind="connrate")
    rows = []
    for link, lname in (("veth", "plain veth"),
                        ("linkem", "linkem, no impairment")):
        for p in short_paths(sel(cr, link=link)):
            m = sel(cr, link=link, path=p)
            ok = vals(cr, "per_second", link=link, path=p)
            rows.append([lname, PATH_NAMES[p],
                         med_range(ok) if ok else "FAILED",
                         paired_ratio(cr, "per_second", p, link=link)
                         if p != "direct" else "1",
                         fmt(med(vals(cr, "p50_ms", link=link, path=p))),
                         fmt(med(vals(cr, "cpu_server_s_per_1k", link=link,
                                      path=p))),
                         fmt(med(vals(cr, "cpu_client_s_per_1k", link=link,
                                      path=p))),
                         load_cell(cr, link=link, path=p),
                         "%d / %d" % (len(ok), len(m))])
    if rows:
        out.append(
            "### New connections: sequential 1 KiB GETs, one connection "
            "each (issue 18)\n\n%s sequential HTTP/1.0 GETs of 1 KiB per "
            "cell (`bench/conns.c seq`), each on its own connection, read "
            "to its Content-Length and checked against the first body; "
            "median (min–max) over the runs; / direct: the median (min–max) "
            "of the rounds' ratios to the direct path on the same link in "
            "the same round; CPU seconds (user + system, all threads) of "
            "tunsplit's server and client per 1,000 connections; the "
            "1-minute load average at the cells.  %s\n\n" % (
                meta.get("conn_count", "?"), mtu_note(cr)) +
            table(["link", "path", "new conn/s", "/ direct",
                   "median ms per GET", "server CPU s / 1,000",
                   "client CPU s / 1,000", "load", "runs ok"], rows))
    bu = sel(sh, kind="burst")
    if bu:
        rows = []
        for link, lname in (("veth", "plain veth"),
                            ("linkem", "linkem, no impairment")):
            for p in short_paths(sel(bu, link=link)):
                kw = dict(link=link, path=p)
                ok = vals(bu, "seconds", **kw)
                rows.append([lname, PATH_NAMES[p],
                             med_range(ok) if ok else "FAILED",
                             paired_ratio(bu, "seconds", p, link=link)
                             if p != "direct" else "1",
                             fmt(med(vals(bu, "p50_ms", **kw))),
                             fmt(med(vals(bu, "cpu_server_s", **kw))),
                             fmt(med(vals(bu, "cpu_client_s", **kw))),
                             load_cell(bu, **kw),
                             "%d / %d" % (len(ok), len(sel(bu, **kw)))])
        out.append(
            "### A burst: %s connections at once, %s bytes each way"
            "\n\nAll connections opened back to "
            "back without waiting (`bench/conns.c burst`) to the target's "
            "echo server; every byte checked; completion = first connect "
            "to the last byte of the last connection, median (min–max) "
            "over the runs; / direct as above (of the times: above 1 is "
            "slower).\n\n" % (meta.get("burst_conns", "?"),
                                    meta.get("burst_bytes", "?")) +
            table(["link", "path", "completion s", "/ direct",
                   "median per connection ms", "server CPU s",
                   "client CPU s", "load", "runs ok"], rows))
    tt = sel(sh, kind="ttfb")
    if tt:
        rtt = meta.get("rtt_ms")
        rows = []
        for p in short_paths(tt):
            f = vals(tt, "ttfb_ms_median", path=p)
            rows.append([PATH_NAMES[p], fmt(med(vals(tt, "connect_ms_median",
                                                     path=p))),
                         med_range(f) if f else "FAILED",
                         fmt(med(vals(tt, "ttfb_ms_p99", path=p))),
                         "%.3f" % (med(f) / rtt) if f and rtt else "n/a"])
        out.append(
            "### A new connection's first byte at RTT %s ms (issue 18)\n\n"
            "%s sequential curl GETs of 1 KiB per run on the lfl link "
            "without loss; the median over the runs of each run's median, "
            "and as a multiple of the RTT.\n\n" % (
                rtt, meta.get("ttfb_samples", "?")) +
            table(["path", "connect ms", "first byte ms", "first byte p99 ms",
                   "RTTs"], rows))
    idle = sel(sh, kind="idle")
    if idle:
        rows = []
        for p in short_paths(idle):
            per = {"client": [], "server": []}
            for r in sel(idle, path=p):
                for st in r.get("steps", []):
                    for side in per:
                        b = st["bytes_per_flow"].get(side)
                        if b is not None:
                            per[side].append(b / 1024)
            rows.append([PATH_NAMES[p], med_range(per["client"]),
                         med_range(per["server"]),
                         return_cell(sel(idle, path=p))])
        out.append(
            "### Idle flows: RSS per flow at %s flows, with and without "
            "reuse (plain veth)\n\nKiB per flow, the daemon's RSS growth "
            "11 s after the last flow opened; then all flows closed, and "
            "the RSS 25 s later against the RSS before them (issue 19: "
            "within 1.25x); median (min–max) over the runs.\n\n" %
            meta.get("short_idle_flows", "?") +
            table(["path", "client KiB / flow", "server KiB / flow",
                   "RSS after / before: client / server"], rows))
    return "\n\n".join(out)


def accuracy_rows(rs):
    rows = []
    for r in rs:
        if r["kind"] == "ping" and "error" not in r:
            rows.append(["ping RTT (%s)" % (r["link_args"] or "no options"),
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
        if r["kind"] != "iperf" or not r.get("loss") or not r.get("linkem"):
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


def t_accuracy(rs, meta):
    acc = accuracy_rows(rs)
    return ("### linkem accuracy\n\n" + mtu_note(
        [r for r in rs if r["kind"] in ("ping", "udp") or
         r.get("loss") and r["kind"] == "iperf"]) + "\n\n" + table(
        ["check", "configured", "measured"], acc)) if acc else None


TABLES = [t_lfl, t_kept, t_targets, t_hiloss, t_ttfb, t_rrlat, t_ceiling,
          t_tunnels, t_offload, t_cworkers, t_cworkers_cpu, t_hev, t_scale,
          t_short, t_accuracy]


def tables(doc):
    meta = doc["meta"]
    rs = with_mtu(doc["results"], meta)
    return "\n\n".join(t for t in (f(rs, meta) for f in TABLES) if t)


def conditions(meta, rs=()):
    loads = [r["load1"] for r in rs if r.get("load1") is not None]
    during = (" (1-minute load %.1f–%.1f, mean %.1f, over the "
              "measurements)" % (min(loads), max(loads),
                                 sum(loads) / len(loads))) if loads else ""
    return (
        "Run of %s, `%s` (%d s), on %s (%d CPUs), kernel %s; %s, %s, %s, "
        "kcptun %s, tunsplit %s.  Load average %s at the start and %s at "
        "the end%s; other work may share the machine, which is why "
        "each table compares paths measured in the same run.  Throughput: "
        "iperf3 %s s after %s s omitted per cell (15 %%: %s s after %s s; "
        "ceiling and veth runs %s s); tunnels and their endpoints run %s; "
        "tunsplit's TUN MTU %s, warm pool %s; kcptun runs in the lossy "
        "table at %s %% loss (– = not run)%s." % (
            meta["date"], meta["command"].strip(), meta.get("duration_s", 0),
            meta["cpu"], meta["cpus"], meta["kernel"], meta["iperf3"],
            meta["openvpn"], meta.get("v2ray", "v2ray"),
            meta.get("kcptun", "?"), meta.get("tunsplit", "?"),
            meta["loadavg_start"], meta["loadavg_end"], during,
            meta["iperf_seconds"], meta["iperf_omit"],
            meta.get("hiloss_seconds", "?"), meta.get("hiloss_omit", "?"),
            meta.get("short_seconds", "?"), meta.get("tunnel_cc", "bbr").upper(),
            ts_mtus_text(meta), meta.get("tunsplit_pool", "?"),
            " and ".join(meta.get("kcptun_lfl_losses", "?").split()),
            "; the whole plan ran %d times over, one round after another, "
            "each round with the loss seeds moved on by one" %
            meta["rounds"] if meta.get("rounds", 1) > 1 else "") +
        lfl_seeds_text(meta, rs))


def ts_mtus_text(meta):
    mtus = str(meta.get("tunsplit_mtus", meta.get("tunsplit_mtu", "?")))
    mtus = mtus.split()
    if len(mtus) < 2:
        return mtus[0] if mtus else "?"
    return "%s (%s where a column or row says so, with an app MSS of " \
        "the MTU less 40)" % (mtus[0], and_list(mtus[1:]))


def and_list(xs):
    return xs[0] if len(xs) == 1 else ", ".join(xs[:-1]) + " and " + xs[-1]


def lfl_seeds_text(meta, rs=()):
    seeds = meta.get("lfl_seeds", "").split()
    hi = meta.get("lfl_seeds_hi", "").split()
    if len(seeds) < 2 and len(hi) < 2:
        return ""
    if rs and not any(r.get("scenario") in ("lfl", "hiloss") for r in rs):
        return ""	# no lossy cell in this run: no seeds to speak of
    # Only the seed rules of losses this run measured (all, for a file
    # without results).
    losses = {r["loss"] for r in rs if r.get("scenario") == "lfl"
              and r.get("loss") is not None} or None

    def ran(lo, top=None):
        try:
            lo, top = float(lo), None if top is None else float(top)
        except (TypeError, ValueError):
            return True
        return losses is None or any(
            x >= lo and (top is None or x < top) for x in losses)
    names = {"direct": "direct %s" % "/".join(
        c.upper() for c in meta.get("lfl_seed_ccs", "bbr").split())}

    def who(key):
        return ", ".join(names.get(p, PATH_NAMES.get(p, p))
                         for p in meta.get(key, "").split())

    parts = []
    lo, top = meta.get("lfl_seed_min_loss", "?"), meta.get(
        "lfl_seed_hi_min_loss")
    mtus = str(meta.get("tunsplit_mtus", "")).split()
    if len(seeds) > 1 and ran(lo, top):
        parts.append("at %s %% loss%s, %s also %s" % (
            lo, " and more" if top is None else " and more, below %s %%" % top,
            who("lfl_seed_paths"), and_list(seeds[1:])))
    if top is not None and len(hi) > 1 and ran(top):
        parts.append("at %s %% and more, %s also %s (the other paths%s the "
                     "first only)" % (top, who("lfl_seed_hi_paths"),
                                      and_list(hi[1:]),
                                      ", and tunsplit at TUN MTU %s," %
                                      and_list(mtus[1:])
                                      if len(mtus) > 1 and
                                      not meta.get("tunsplit_mtus_all_seeds")
                                      else ""))
    if not parts:
        return ""
    return ("  Loss seeds: every cell %s; %s (median and min–max)." % (
        (seeds or hi)[0], "; ".join(parts)))


BEGIN = "<!-- bench:begin (generated by bench/report.py readme) -->"
END = "<!-- bench:end -->"


def run_title(meta):
    """A heading for one run among several: its TUN MTUs, plan and date."""
    mtus = str(meta.get("tunsplit_mtus", meta.get("tunsplit_mtu", "?")))
    cmd = meta["command"].strip()
    return "### TUN MTU %s: %s, %s UTC" % (
        and_list(mtus.split()),
        "the default plan" if cmd == "bench/run.sh" else "`%s`" % cmd,
        meta["date"][:16].replace("T", " "))


def readme(docs):
    """docs: [(doc, file name)]; with more than one, each run gets its own
    heading and its tables one level below."""
    parts = [BEGIN, "```\nmake -C build bench             # as root; = bench/run.sh, "
             "see bench/README.md\n```"]
    for doc, name in docs:
        if len(docs) > 1:
            parts.append(run_title(doc["meta"]))
        parts.append(conditions(doc["meta"], doc["results"]) +
                     "  Results: `bench/results/%s`." % name)
        parts.append(tables(doc).replace("### ", "#### "))
    parts.append(END)
    return "\n\n".join(parts)


def cmd_readme(*args):
    """readme OUT-JSON [OUT-JSON...] [doc/PERFORMANCE.md]"""
    import os
    outs = [a for a in args if not a.endswith(".md")]
    mds = [a for a in args if a.endswith(".md")]
    if not outs or len(mds) > 1:
        sys.exit(__doc__)
    doc_path = mds[0] if mds else None
    docs = []
    for out_path in outs:
        doc = load(out_path)
        if doc is None:
            sys.exit("%s: cannot read" % out_path)
        docs.append((doc, os.path.basename(out_path)))
    text = readme(docs)
    if not doc_path:
        print(text)
        return
    with open(doc_path) as f:
        old = f.read()
    b, e = old.find(BEGIN), old.find(END)
    if b < 0 or e < b:
        sys.exit("%s: no bench markers (the tables live in "
                 "doc/PERFORMANCE.md)" % doc_path)
    new = old[:b] + text + old[e + len(END):]
    with open(doc_path + ".tmp", "w") as f:
        f.write(new)
    os.rename(doc_path + ".tmp", doc_path)


def summary(results):
    """Throughput cells run with several seeds (lfl, hiloss): median and
    range per path, CC, flows, loss and direction."""
    cells = {}
    for r in results:
        if r["kind"] != "iperf" or r["scenario"] not in ("lfl", "hiloss"):
            continue
        k = (r["scenario"], r["path"], r["cc"], r["flows"], r["loss"],
             r["dir"])
        cells.setdefault(k, []).append(r)
    out = []
    for k, rs in sorted(cells.items(), key=lambda kv: str(kv[0])):
        ok = [r["mbit"] for r in rs if "error" not in r]
        c = dict(zip(("scenario", "path", "cc", "flows", "loss", "dir"), k))
        c.update({"runs": len(rs), "failed": len(rs) - len(ok),
                  "seeds": [r.get("seed") for r in rs],
                  "mbit_each": [None if "error" in r else r["mbit"]
                                for r in rs]})
        if ok:
            c.update({"mbit_median": round(statistics.median(ok), 2),
                      "mbit_min": min(ok), "mbit_max": max(ok)})
        out.append(c)
    return out


def cmd_final(jsonl, meta_path, out_path):
    with open(jsonl) as f:
        results = [json.loads(line) for line in f if line.strip()]
    doc = {"meta": load(meta_path), "results": results,
           "summary": summary(results)}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    base = out_path[:-5] if out_path.endswith(".json") else out_path
    for scen in sorted({r["scenario"] for r in results}):
        with open("%s.%s.json" % (base, scen), "w") as f:
            json.dump({"meta": doc["meta"], "scenario": scen,
                       "results": sel(results, scenario=scen)}, f, indent=1)
            f.write("\n")
    print(tables(doc))


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    cmd, args = argv[1], argv[2:]
    kinds = {"iperf": cmd_iperf, "udp": cmd_udp, "ttfb": cmd_ttfb,
             "ping": cmd_ping, "rrlat": cmd_rrlat, "connrate": cmd_connrate,
             "idle": cmd_idle, "burst": cmd_burst}
    if cmd in kinds:
        meta = json.loads(args[0])
        r = kinds[cmd](meta, *args[1:])
        print(json.dumps(r))
    elif cmd == "final":
        cmd_final(*args)
    elif cmd == "tables":
        print(tables(load(args[0])))
    elif cmd == "readme":
        cmd_readme(*args)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
