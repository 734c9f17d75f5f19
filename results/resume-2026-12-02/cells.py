#!/usr/bin/env python3
"""cells.py RESUMED_DIR UNINTERRUPTED_RESULTS_JSON: the resumed run's cells (start time, kept, counts)
beside an uninterrupted run's, and each cell's records in RESUMED_DIR/records.jsonl (cells.txt)."""
import json
import sys

r = json.load(open(sys.argv[1] + '/results.json'))
u = json.load(open(sys.argv[2]))
print(f"results.json: resumed={r['resumed']}, resumed_from.created_at={r['resumed_from']['created_at']}, kept_cells={r['resumed_from']['kept_cells']}, rerun_cells={r['resumed_from']['rerun_cells']}, complete={r['complete']}")
print(f"incomplete_reason of the interrupted run: {r['resumed_from']['incomplete_reason']}")
print()
print(f"{'order':>5} {'arm':<13} {'req/s':>5} {'rep':>3} {'started_at (UTC)':<31} {'kept':<5} {'measured n':>10} {'warm-up n':>9} | uninterrupted run (results/quickstart-2026-12-01): same cell, n, warm-up n")
for c, d in zip(r['cells'], u['cells']):
    same = (c['arm'], c['offered_load_rps'], c['repetition']) == (d['arm'], d['offered_load_rps'], d['repetition'])
    print(f"{c['order']:>5} {c['arm']:<13} {c['offered_load_rps']:>5g} {c['repetition']:>3} {c['started_at']:<31} {str(c.get('kept', False)):<5} {sum(c['states'].values()):>10} {c['warmup_records']:>9} | {'yes' if same else 'NO'}, {sum(d['states'].values())}, {d['warmup_records']}")
print()
print(f"run_order equal to the uninterrupted run's: {r['run_order'] == u['run_order']}; config sha256 {r['manifest']['config_sha256'][:12]} (uninterrupted {u['manifest']['config_sha256'][:12]}); trace sha256 {r['trace']['sha256'][:12]} (uninterrupted {u['trace']['sha256'][:12]})")
recs = {}
for line in open(sys.argv[1] + '/records.jsonl'):
    x = json.loads(line)
    recs.setdefault((x['arm'], x['offered_load_rps'], x['repetition']), []).append(x['request_id'])
print("records.jsonl: " + ", ".join(f"{a}@{l:g}: {len(v)} records, {len(set(v))} distinct ids" for (a, l, _), v in recs.items()))
