"""Summarise a quickstart-2026-12-02j or -02k mode folder: per seed, the wall time, each verdict with its
interval and truth, client-bound cells and probes, each arm's capacity bracket against the
simulator's truth, and each pinned core pair's busy share over the run (/proc/stat).
Usage: python3 summarise.py DIR   (DIR: the unpacked loaded/ or idle/ folder)"""
import json
import os
import sys

d = sys.argv[1]


def cpu_times(path):
    out = {}
    for line in open(path):
        f = line.split()
        vals = [int(x) for x in f[1:]]
        out[f[0]] = (sum(vals) - vals[3] - vals[4], sum(vals))  # busy (not idle, not iowait), total
    return out


before, after = cpu_times(os.path.join(d, 'stat-before.txt')), cpu_times(os.path.join(d, 'stat-after.txt'))
for s in range(1, 8):
    sd = os.path.join(d, 'seed-%d' % s)
    wall = [line for line in open(os.path.join(sd, 'console.txt')) if line.startswith('rc ')][0].strip()
    r = json.load(open(os.path.join(sd, 'results.json')))
    c0 = 2 + 2 * (s - 1)
    busy = [(after['cpu%d' % c][0] - before['cpu%d' % c][0]) / max(1, after['cpu%d' % c][1] - before['cpu%d' % c][1])
            for c in (c0, c0 + 1)]
    cells = r['cells']
    cb = sum(1 for c in cells if c.get('client_bound'))
    late = [c.get('dispatch_late_sends', 0) for c in cells]
    print('seed %d: %s; cores %d-%d busy %.0f%%/%.0f%%; client-bound cells %d of %d; late sends per cell %s' % (
        s, wall, c0, c0 + 1, 100 * busy[0], 100 * busy[1], cb, len(cells), late))
    truth = {t['candidate']: t['value'] for t in r.get('sim_truth', []) if t['metric'] == 'e2e' and t['stat'] == 'mean'}
    for v in r['verdicts']:
        print('  %-14s %s (truth %.3f)' % (v['candidate'], v['summary'][:200], truth.get(v['candidate'], float('nan'))))
    for a in r['capacity_search']['arms']:
        cap, t = a['capacity_rps'], a.get('sim_truth', {})
        probes = [p for p in a['probes'] if p['source'] == 'search']
        print('  capacity %-14s bracket [%.2f, %s] truth %.2f (holds: %s); probes %d, client-bound %d; stopped: %s' % (
            a['arm'], a.get('pass_rps') or 0, '%.2f' % a['fail_rps'] if a.get('fail_rps') else '-',
            t.get('met_rps', 0),
            bool(a.get('pass_rps') and a.get('fail_rps') and a['pass_rps'] <= t.get('met_rps', 0) <= a['fail_rps']),
            len(probes), sum(1 for p in probes if p.get('client_bound')), a.get('stopped')))
        print('    capacity_rps %s%s' % (cap.get('value'), ' (suspect fail end: withheld)' if a.get('suspect_fail_end') else ''))
    for g in r['capacity_search'].get('gains', []):
        e = g['gain']
        print('  gain %-14s %s [%s, %s] truth %.3f; cost change %s %%%s' % (
            g['candidate'], e.get('value'), e.get('low'), e.get('high'), g.get('sim_truth', 0),
            g.get('cost_change_pct'), (' (' + e['note'] + ')') if e.get('note') else ''))
