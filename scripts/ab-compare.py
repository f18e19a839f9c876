#!/usr/bin/env python3
"""Prints the comparison of an scripts/ab-rwbench output directory.

For every (workload, parameters, lock, threads) point: each round's new/base
ratio of median ops/s (the two sides of a round ran one after the other, so
they share the machine's mood), and the median of those ratios over the
rounds; worst first; rows whose median ratio moved by more than 5% are
flagged. The peers' rows (parking_lot, std, pthread: code that did not
change) show how much the machine alone moves a point."""
import csv
import pathlib
import statistics
import sys


def load(out, side):
    """{(workload, params, lock, threads): {round: ops/s}}"""
    points = {}
    for path in sorted(pathlib.Path(out).glob(f"{side}-*/results.csv")):
        rnd = path.parent.name.rsplit("-", 1)[1]
        for row in csv.DictReader(open(path)):
            key = (row["workload"], row["params"], row["lock"], int(row["threads"]))
            points.setdefault(key, {})[rnd] = float(row["median_ops_per_sec"])
    return points


def main(out):
    base, new = load(out, "base"), load(out, "new")
    rows = []
    for key in sorted(set(base) & set(new)):
        rounds = sorted(set(base[key]) & set(new[key]))
        ratios = [new[key][r] / base[key][r] for r in rounds if base[key][r]]
        if not ratios:
            continue
        b = statistics.median(base[key][r] for r in rounds)
        n = statistics.median(new[key][r] for r in rounds)
        rows.append((statistics.median(ratios), key, b, n, ratios))
    rows.sort()
    flagged = 0
    for ratio, (workload, params, lock, threads), b, n, ratios in rows:
        flag = ""
        if abs(ratio - 1) > 0.05:
            flag = "  <-- moved more than 5%"
            flagged += 1
        each = " ".join(f"{r:.2f}" for r in ratios)
        print(f"{ratio:6.3f}  {workload:14} {params[:34]:34} {lock:22} t={threads:<3} "
              f"base {b / 1e6:9.3f} M/s  new {n / 1e6:9.3f} M/s  rounds [{each}]{flag}")
    print(f"{len(rows)} points, {flagged} moved by more than 5% (median of per-round ratios)")


if __name__ == "__main__":
    main(sys.argv[1])
