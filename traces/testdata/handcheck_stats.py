# Independent recomputation of `transferlab trace stats FILE --json` for an Azure 2023 CSV or a
# Mooncake JSONL, in plain Python (decimal + statistics), used by hand to check the Go numbers:
#   transferlab trace stats FILE --json > go.json && python3 handcheck_stats.py FILE go.json
# Not run by tests.
import sys, json, math, statistics, datetime
from decimal import Decimal as D
path = sys.argv[1]
ts, ins, outs = [], [], []
if path.endswith('.jsonl'):
    for line in open(path):
        if line.strip():
            o = json.loads(line)
            ts.append(D(o['timestamp']) / 1000); ins.append(o['input_length']); outs.append(o['output_length'])
else:
    rows = [l.rstrip('\r\n').split(',') for l in open(path, newline='') if l.strip()][1:]
    for r in rows:
        d, f = r[0].split('.')
        sec = datetime.datetime.strptime(d, '%Y-%m-%d %H:%M:%S').replace(tzinfo=datetime.timezone.utc).timestamp()
        ts.append(D(int(sec)) + D('0.' + f)); ins.append(int(r[1])); outs.append(int(r[2]))
n = len(ts); t0 = ts[0]; off = [t - t0 for t in ts]
dur = off[-1]
gaps = [float(off[i+1] - off[i]) for i in range(n-1)]
cv = statistics.pstdev(gaps) / statistics.mean(gaps)
bins = int(dur) + 1
c = [0]*bins
for o in off: c[int(o)] += 1
disp = statistics.pvariance(c) / statistics.mean(c)
def pct(v, p):
    v = sorted(v); return v[math.ceil(p*len(v)/100) - 1]
out = dict(rows=n, duration_s=float(dur), mean_rate_rps=(n-1)/float(dur), interarrival_cv=cv, dispersion_index_1s=disp,
           max_arrivals_per_second=max(c), dup=sum(1 for i in range(1,n) if off[i]==off[i-1]),
           inp=[min(ins), pct(ins,50), pct(ins,90), pct(ins,99), max(ins), statistics.mean(ins)],
           outp=[min(outs), pct(outs,50), pct(outs,90), pct(outs,99), max(outs), statistics.mean(outs)])
print(json.dumps(out))
go = json.load(open(sys.argv[2]))
for k in ['rows','duration_s','mean_rate_rps','interarrival_cv','dispersion_index_1s','max_arrivals_per_second']:
    print(f"{k:26s} python={out[k]!r:24} go={go[k]!r:24} {'OK' if math.isclose(out[k], go[k], rel_tol=1e-9) else 'MISMATCH'}")
print('dup rows', out['dup'], go['duplicate_offset_rows'])
g = lambda t: [t['min_tokens'], t['p50_tokens'], t['p90_tokens'], t['p99_tokens'], t['max_tokens'], t['mean_tokens']]
print('input ', out['inp'], g(go['input_tokens']), 'OK' if all(math.isclose(a,b,rel_tol=1e-12) for a,b in zip(out['inp'], g(go['input_tokens']))) else 'MISMATCH')
print('output', out['outp'], g(go['output_tokens']), 'OK' if all(math.isclose(a,b,rel_tol=1e-12) for a,b in zip(out['outp'], g(go['output_tokens']))) else 'MISMATCH')
