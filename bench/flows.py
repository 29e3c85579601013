#!/usr/bin/env python3
"""Many-connection helpers for bench/run.sh (the "scale" scenario).

  flows.py hold ADDR PORT
      accept connections and keep them open (the target side); what they
      send is dropped, and each is closed once its peer closed
  flows.py open ADDR PORT STEPS WAIT PIDS [AFTER]
      open connections one after another, one byte written on each, up to
      each count in STEPS ("1000,10000"); at each step wait WAIT seconds and
      read the RSS of PIDS ("client=123,server=456", 0 = none; a PID's
      children of its name added, a client's workers); with AFTER,
      then read their peak RSS (VmHWM), close every connection and read
      the RSS again 3 s later and AFTER s later (memory that comes back
      after a burst); one JSON line at the end, progress on stderr

(The sequential connection rate is bench/conns.c's.)

Connections only ever go to ADDR, an address of the bench's own namespaces.
"""

import json
import os
import resource
import selectors
import socket
import sys
import time


def nofile_max():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError):
        pass
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def status_kib(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def stat_of(pid):
    """(command name, ppid) of pid, or None once it is gone."""
    try:
        with open("/proc/%s/stat" % pid) as f:
            s = f.read()
    except OSError:
        return None
    name = s[s.index("(") + 1:s.rindex(")")]
    return name, int(s[s.rindex(")") + 2:].split()[1])


def rss_kib(pid, field="VmRSS:"):
    """FIELD of pid's /proc status in KiB, its children of the same name
    added: a tunsplit client with workers: N is N processes."""
    if not pid:
        return None
    me = stat_of(pid)
    total = status_kib(pid, field)
    if me is None or total is None:
        return None
    for p in os.listdir("/proc"):
        if p.isdigit() and stat_of(p) == (me[0], pid):
            total += status_kib(int(p), field) or 0
    return total


def hold(addr, port):
    nofile_max()
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    lsock = socket.socket(fam)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((addr, port))
    lsock.listen(4096)
    lsock.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(lsock, selectors.EVENT_READ)
    while True:
        for key, _ in sel.select():
            if key.fileobj is lsock:
                try:
                    c = lsock.accept()[0]
                except BlockingIOError:
                    continue
                c.setblocking(False)
                sel.register(c, selectors.EVENT_READ)
                continue
            try:
                data = key.fileobj.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                sel.unregister(key.fileobj)
                key.fileobj.close()


def open_flows(addr, port, steps, wait, pids, after=None):
    limit = nofile_max()
    steps = sorted(int(x) for x in steps.split(","))
    if steps[-1] + 64 > limit:
        sys.exit("flows.py: %d connections need more than the %d open "
                 "files allowed" % (steps[-1], limit))
    pids = {k: int(v) for k, v in (p.split("=") for p in pids.split(","))}
    out = {"steps": [], "rss_kib_before": {k: rss_kib(v)
                                           for k, v in pids.items()}}
    socks = []
    t0 = time.monotonic()
    last_say = t0
    for target in steps:
        while len(socks) < target:
            try:
                s = socket.create_connection((addr, port), timeout=20)
                s.sendall(b"x")
            except OSError as e:
                out["error"] = "connection %d: %s" % (len(socks) + 1, e)
                print(json.dumps(out))
                return 1
            socks.append(s)
            now = time.monotonic()
            if now - last_say >= 5:
                print("  ... %d connections open" % len(socks),
                      file=sys.stderr, flush=True)
                last_say = now
        opened = time.monotonic() - t0
        time.sleep(wait)
        out["steps"].append({
            "flows": target, "open_seconds": round(opened, 2),
            "rss_kib": {k: rss_kib(v) for k, v in pids.items()}})
    if after is not None:
        out["hwm_kib"] = {k: rss_kib(v, "VmHWM:") for k, v in pids.items()}
        for s in socks:
            s.close()
        socks = []
        t1 = time.monotonic()
        for key, at in (("rss_kib_after_3s", 3), ("rss_kib_after", after)):
            time.sleep(max(0, t1 + at - time.monotonic()))
            out[key] = {k: rss_kib(v) for k, v in pids.items()}
        out["after_s"] = after
    print(json.dumps(out))
    return 0


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    cmd, addr, port = argv[1], argv[2], int(argv[3])
    if cmd == "hold" and len(argv) == 4:
        return hold(addr, port)
    if cmd == "open" and len(argv) in (7, 8):
        return open_flows(addr, port, argv[4], float(argv[5]), argv[6],
                          float(argv[7]) if len(argv) == 8 else None)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
