#!/usr/bin/env python3
"""Tabulates run.sh's shard-scaling runs: table.py WORK N...

Every latency figure is read from the results.json files `transferlab` wrote (merged and per
shard); this script only counts records and truth lines, and compares distributions.
Per N and cell: the offered load (req/s, total), requests in the unsplit schedule (shard.json),
records in the merged records.jsonl (distinct request ids, ok), schedule-lag p99 (ms) of the merged
cell and the largest of the shards' own, and whether the cell was sustained (merged lag p99 <= 1 ms
and every record ok). Per N: the serve-sim's truth lines against the records, the cores the
simulator and each shard used, and the merge's wall time. Then merged TTFT/E2E against the N=1
run's at the same total rate (percentiles and a two-sample Kolmogorov-Smirnov test at alpha 0.001).
"""
import collections
import json
import math
import os
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def records(path):
    out = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            out[r["offered_load_rps"]].append(r)
    return out


def ks(a, b):
    """Two-sample Kolmogorov-Smirnov D and its critical value at alpha = 0.001."""
    a, b = sorted(a), sorted(b)
    i = j = 0
    d = 0.0
    while i < len(a) and j < len(b):
        x = min(a[i], b[j])
        while i < len(a) and a[i] <= x:
            i += 1
        while j < len(b) and b[j] <= x:
            j += 1
        d = max(d, abs(i / len(a) - j / len(b)))
    n, m = len(a), len(b)
    return d, math.sqrt(-math.log(0.001 / 2) / 2) * math.sqrt((n + m) / (n * m))


def p(d, q):
    v = d.get(q)
    return "-" if v is None else f"{v:.3f}"


def main():
    work, ns = sys.argv[1], [int(x) for x in sys.argv[2:]]
    runs = {}
    print("Shard scaling against one serve-sim (all server figures simulated; client figures measured)")
    for n in ns:
        d = os.path.join(work, f"n{n}")
        merged = load(os.path.join(d, "merged", "results.json"))
        man0 = load(os.path.join(d, "shard-0", "shard.json"))
        shard_res = [load(os.path.join(d, f"shard-{i}", "results.json")) for i in range(n)]
        recs = records(os.path.join(d, "merged", "records.jsonl"))
        with open(os.path.join(d, "truth.json")) as f:
            truth = [json.loads(line) for line in f if line.strip()]
        prof = load(os.path.join(d, "profile.json"))
        t0, t1, w0, w1, tck = open(os.path.join(d, "sim.cpu")).read().split()
        sim_cores = (float(t1) - float(t0)) / float(tck) / (float(w1) - float(w0))
        samples = [tuple(map(float, l.split())) for l in open(os.path.join(d, "sim.samples")) if len(l.split()) == 2]
        sim_peak = max(((b[1] - a[1]) / float(tck) / (b[0] - a[0]) for a, b in zip(samples, samples[2:])), default=float("nan"))
        shard_cpu = []
        for i in range(n):
            real, user, sys_ = map(float, open(os.path.join(d, f"shard-{i}.time")).read().split()[-3:])
            shard_cpu.append((user + sys_) / real)
        merge_s = float(open(os.path.join(d, "merge.time")).read().split()[-3])
        cfg_rates = merged["manifest"]["config_effective"]["Load"]["RatesRPS"]
        print(f"\n## N = {n} shard process(es), commit {merged['manifest'].get('git_commit') or 'unrecorded'}")
        print(f"{'offered req/s':>13} {'scheduled':>9} {'recorded':>8} {'distinct':>8} {'ok':>8} "
              f"{'lag p99 ms':>10} {'max shard lag p99':>17} {'late start ms':>13}  sustained")
        cells = {}
        total = 0
        for k, c in enumerate(merged["cells"]):
            rate = c["offered_load_rps"]
            sched = next(s for s in man0["schedules"] if cfg_rates[s["load_index"]] == rate)
            rs = recs.get(rate, [])
            total += len(rs)
            ids = {r["request_id"] for r in rs}
            ok = sum(r["state"] == "ok" for r in rs)
            lag = c["schedule_lag"].get("p99_ms")
            shard_lag = max((sc["schedule_lag"].get("p99_ms") or float("nan")) for r_ in shard_res
                            for sc in r_["cells"] if sc["offered_load_rps"] == rate)
            late = max(cs["late_ms"] for i in range(n)
                       for cs in load(os.path.join(d, f"shard-{i}", "shard.json"))["cells"] if cs["order"] == k)
            sustained = lag is not None and lag <= 1.0 and ok == len(rs) == sched["requests"]
            cells[rate] = (c, sustained)
            print(f"{rate:>13g} {sched['requests']:>9} {len(rs):>8} {len(ids):>8} {ok:>8} "
                  f"{p(c['schedule_lag'], 'p99_ms'):>10} {shard_lag:>17.3f} {late:>13.1f}  {'yes' if sustained else 'no'}")
        best = max([r for r, (_, s) in cells.items() if s], default=None)
        print(f"sustained total rate (lag p99 <= 1 ms, every request ok): {best if best is not None else 'none'} req/s")
        all_ids = {r["request_id"] for rs in recs.values() for r in rs}
        # Each shard sends one minimal completion before it measures (the
        # manifest's completion_check): its prompt tokens reach the server's
        # counters but no record.
        checks = sum(((srv.get("description") or {}).get("completion_check") or {}).get("prompt_tokens") or 0
                     for r_ in shard_res for srv in (r_["manifest"].get("server") or {}).values() if isinstance(srv, dict))
        reqs = prof['prefill_tokens'] - checks
        print(f"serve-sim: prefill tokens {prof['prefill_tokens']} less {checks} of the shards' up-front completion checks "
              f"= {reqs / 32:g} requests of 32 against {total} recorded ({'equal' if reqs == 32 * total else 'DIFFERENT'}); "
              f"decode tokens {prof['decode_tokens']}; in flight at the end {prof['in_flight']}")
        print(f"serve-sim truth (one line per request id, the latest: ids repeat across cells): {len(truth)} ids, "
              f"{len(all_ids)} recorded ids ({'equal' if len(truth) == len(all_ids) else 'DIFFERENT'}); "
              f"all 16 tokens flushed and done: {sum(len(t.get('token_flushed_ns') or []) == t['max_tokens'] == 16 and t.get('done_ns') is not None for t in truth)}")
        print(f"cores used: serve-sim {sim_cores:.2f} on average, {sim_peak:.2f} at most over 1 s (of its 8), shards {', '.join(f'{x:.2f}' for x in shard_cpu)} (of 2 each)")
        print(f"merge: {merge_s:.2f} s wall for {total} records; warnings: {len(merged.get('warnings') or [])}")
        for w in merged.get("warnings") or []:
            print(f"  - {w[:200]}")
        runs[n] = cells
    if 1 in runs:
        print("\n## Merged percentiles against the single process (N = 1) at the same total rate")
        print(f"{'N':>2} {'req/s':>6} {'both sustained':>14} {'TTFT p50 ms N=1 / N':>22} {'TTFT p99':>17} "
              f"{'E2E p50':>17} {'E2E p99':>17} {'KS TTFT D/crit':>15} {'KS E2E D/crit':>15}")
        for n in ns:
            if n == 1:
                continue
            for rate, (c, s) in sorted(runs[n].items()):
                if rate not in runs[1]:
                    continue
                c1, s1 = runs[1][rate]
                row = [f"{n:>2} {rate:>6g} {('yes' if s and s1 else 'no'):>14}"]
                for m, q in (("ttft", "p50_ms"), ("ttft", "p99_ms"), ("e2e", "p50_ms"), ("e2e", "p99_ms")):
                    w = 22 if q == "p50_ms" and m == "ttft" else 17
                    row.append(f"{p(c1[m], q) + ' / ' + p(c[m], q):>{w}}")
                for m in ("ttft_ms", "e2e_ms"):
                    a = [r[m] for r in c1["requests"] if r.get(m) is not None]
                    b = [r[m] for r in c["requests"] if r.get(m) is not None]
                    dd, crit = ks(a, b)
                    row.append(f"{dd:.3f}/{crit:.3f}{'' if dd <= crit else ' !':<2}".rjust(15))
                print(" ".join(row))


if __name__ == "__main__":
    main()
