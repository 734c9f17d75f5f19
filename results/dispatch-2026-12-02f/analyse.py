#!/usr/bin/env python3
"""Summarise run.sh's cases: for each NAME.samples (run.sh's sampler) and NAME.json (bench-client),
over the load's busy stretch (the sample intervals from the first to the last whose TCP segment
rate is at least half the run's highest): the client's and the
server's cores split into user / system / softirq / idle from /proc/stat, the client process's and
the server child's user and system CPU (cores) from /proc/PID/stat, TCP segments sent per second
(both directions on loopback: data + ACKs + requests) and retransmitted, and bench-client's row.
Usage: analyse.py DIR (the unpacked runs.tgz)."""
import json, os, sys

def cpus(spec):
    return [int(c) for c in spec.split(',')]

def parse(path):
    samples, cur = [], None
    for line in open(path):
        tag, _, rest = line.partition(' ')
        if tag == 'T':
            cur = {'t': float(rest), 'cpu': {}, 'P': None, 'C': [], 'N': None}
            samples.append(cur)
        elif tag.startswith('cpu') and cur is not None:
            f = rest.split()
            cur['cpu'][int(tag[3:])] = [int(x) for x in f]
        elif tag in ('P', 'C') and cur is not None and rest.strip():
            f = rest[rest.rindex(')') + 2:].split()
            ut = (int(f[11]), int(f[12]))  # utime, stime (fields 14, 15)
            if tag == 'P':
                cur['P'] = ut
            else:
                cur['C'].append(ut)
        elif tag == 'N' and cur is not None:
            f = rest.split()[1:]
            cur['N'] = (int(f[10]), int(f[11]))  # OutSegs, RetransSegs
    return samples

def group(a, b, cs, dt):
    # /proc/stat: user nice system idle iowait irq softirq steal
    d = [sum(b['cpu'][c][i] - a['cpu'][c][i] for c in cs) / 100 / dt for i in range(8)]
    return {'user': d[0] + d[1], 'sys': d[2], 'irq+softirq': d[5] + d[6], 'idle': d[3] + d[4]}

def main(d):
    """One summary per case of host.txt's CASES."""
    host = open(os.path.join(d, 'host.txt')).read()
    cases = host.split('CASES ', 1)[1].split('\n', 1)[0].split()
    for c in cases:
        st, rate, loops, qa, ccpu, scpu = c.split(':')
        name = f"{st}-{rate}-L{loops}-Q{qa}-c{ccpu.replace(',', '')}"
        s = parse(os.path.join(d, name + '.samples'))
        live = [x for x in s if x['C'] and x['P'] and x['N']]
        if len(live) < 2:
            print(name, 'too few samples')
            continue
        # The load's busy stretch: from the first to the last sample interval
        # whose TCP segment rate is at least half the run's highest (the ramp
        # before, while the server child starts and connections open, and the
        # drain and the truth's analysis after are left out).
        rates = [(y['N'][0] - x['N'][0]) / (y['t'] - x['t']) for x, y in zip(live, live[1:])]
        hot = [i for i, r in enumerate(rates) if r >= max(rates) / 2]
        if len(live) - 1 != len(rates) or not hot:
            print(name, 'no busy stretch')
            continue
        a, b = live[hot[0]], live[hot[-1] + 1]
        if [x for x in (a, b) if len(x['C']) != len(live[0]['C'])]:
            print(name, 'children changed in the stretch')
        dt = b['t'] - a['t']
        cg, sg = group(a, b, cpus(ccpu), dt), group(a, b, cpus(scpu), dt)
        pu, ps = [(b['P'][i] - a['P'][i]) / 100 / dt for i in (0, 1)]
        su = (sum(x[0] for x in b['C']) - sum(x[0] for x in a['C'])) / 100 / dt
        ss = (sum(x[1] for x in b['C']) - sum(x[1] for x in a['C'])) / 100 / dt
        segs = (b['N'][0] - a['N'][0]) / dt
        rtx = b['N'][1] - a['N'][1]
        js = json.load(open(os.path.join(d, name + '.json')))
        if st == 'sim':
            row = js['serve_sim_sweep']['rows'][0]
            extra = (f"itl err p50/p99 {row['itl_error']['p50_us']:.0f}/{row['itl_error']['p99_us']:.0f} us, "
                     f"server write lag p99 {row['server_write_lag']['p99_us']/1000:.1f} ms, queue p99 {row['server_queue_delay']['p99_us']/1000:.1f} ms, "
                     f"server cores (bench) {row['server_cores_used']:.2f}")
        else:
            row = next(r for r in js['sweep'] if True) if 'sweep' in js else None
            extra = ''
        print(f"{name}: busy stretch {dt:.1f} s")
        print(f"  client cores {ccpu}: " + ', '.join(f"{k} {v:.2f}" for k, v in cg.items()) +
              f"; process user {pu:.2f} sys {ps:.2f}")
        print("  server cores: " + ', '.join(f"{k} {v:.2f}" for k, v in sg.items()) +
              f"; child user {su:.2f} sys {ss:.2f}")
        print(f"  TCP segments sent {segs/1e6:.2f} M/s, retransmitted {rtx}")
        if extra:
            print('  ' + extra)

main(sys.argv[1])

def series(d, name, ccpu, scpu):
    """Per sample interval: client group busy (user/sys/si), server group busy, P and C cpu, segs/s."""
    s = [x for x in parse(os.path.join(d, name + '.samples')) if x['P'] and x['N']]
    for a, b in zip(s, s[1:]):
        dt = b['t'] - a['t']
        cg, sg = group(a, b, cpus(ccpu), dt), group(a, b, cpus(scpu), dt)
        pu, ps = [(b['P'][i] - a['P'][i]) / 100 / dt for i in (0, 1)]
        cu = cs = 0.0
        if a['C'] and b['C'] and len(a['C']) == len(b['C']):
            cu = (sum(x[0] for x in b['C']) - sum(x[0] for x in a['C'])) / 100 / dt
            cs = (sum(x[1] for x in b['C']) - sum(x[1] for x in a['C'])) / 100 / dt
        print(f"{b['t']-s[0]['t']:5.2f} cli u{cg['user']:.2f} s{cg['sys']:.2f} si{cg['irq+softirq']:.2f} idle{cg['idle']:.2f} | proc u{pu:.2f} s{ps:.2f}"
              f" | srv u{sg['user']:.2f} s{sg['sys']:.2f} si{sg['irq+softirq']:.2f} idle{sg['idle']:.2f} | child u{cu:.2f} s{cs:.2f} | segs {(b['N'][0]-a['N'][0])/dt/1e6:.2f} M/s rtx {b['N'][1]-a['N'][1]}")
