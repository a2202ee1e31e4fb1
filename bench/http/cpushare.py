#!/usr/bin/env python3
"""cpushare.py — where the machine's CPU went while a load ran: the share of all CPUs busy, and the
daemon's CPU time a request by thread name (its HTTP threads, the batcher's runners, ...).

  cpushare.py snap PID > before.json        (the machine's and every thread's CPU times now)
  cpushare.py diff before.json after.json REQUESTS
prints one line: busy % of the machine, then the daemon's µs a request in all and per thread name.
Linux only (/proc); a thread that ended between the two snapshots is left out."""
import json
import os
import sys

TICK = os.sysconf("SC_CLK_TCK")


def machine():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]  # idle, iowait
    return sum(v[:8]) - idle, idle


def threads(pid):
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/stat") as f:
                s = f.read()
        except OSError:
            continue
        comm = s[s.index("(") + 1 : s.rindex(")")]
        rest = s[s.rindex(")") + 2 :].split()
        out[t] = [comm, int(rest[11]) + int(rest[12])]  # utime + stime (fields 14, 15)
    return out


def main():
    if sys.argv[1] == "snap":
        busy, idle = machine()
        json.dump({"busy": busy, "idle": idle, "threads": threads(int(sys.argv[2]))}, sys.stdout)
        return
    with open(sys.argv[2]) as f:
        a = json.load(f)
    with open(sys.argv[3]) as f:
        b = json.load(f)
    n = max(1, int(float(sys.argv[4])))
    busy, idle = b["busy"] - a["busy"], b["idle"] - a["idle"]
    by = {}
    for t, (comm, ticks) in b["threads"].items():
        d = ticks - a["threads"].get(t, [comm, 0])[1]
        by[comm] = by.get(comm, 0) + d
    us = lambda ticks: ticks / TICK * 1e6 / n
    parts = " ".join(f"{c}={us(v):.1f}" for c, v in sorted(by.items(), key=lambda kv: -kv[1]) if v > 0)
    print(f"busy {100.0 * busy / max(1, busy + idle):5.1f}%  daemon {us(sum(by.values())):6.1f} us/req  ({parts})")


if __name__ == "__main__":
    main()
