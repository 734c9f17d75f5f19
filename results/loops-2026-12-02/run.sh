#!/bin/bash
# loops 2026-12-02, one device call: main's client (crit) and the multi-loop reactor (multi),
# both with the stamp-accuracy criterion, against the fake server and serve-sim.
# As results/dispatch-2026-12-02/run3.sh: client pinned to 2 cores, server children on 4 others.
set -u
D=bin/loops
for b in crit multi; do xz -dc $D/tl-$b.xz > /tmp/tl-$b && chmod +x /tmp/tl-$b; done
R=/tmp/res; mkdir -p $R
{ pwd; cat $D/commits.txt; nproc; uname -a; cat /proc/loadavg; } > $R/host.txt 2>&1
C="taskset -c 2,3"
common="--sim-config $D/serve-sim-fast.yaml --server-cpus 8,9,10,11 --itl-rate 0 --clients reactor"
for b in crit multi; do
  timeout 125 $C /tmp/tl-$b bench-client $common --stages streams,sim --rates 4000,5000,6000 --duration 4s \
    --sim-rates 200,500,1000,1500,2000,2500 --sim-duration 4s --json-out $R/$b.json > $R/$b.txt 2> $R/$b.log
  echo "$b rc=$?" >> $R/log.txt
done
cat /proc/loadavg >> $R/host.txt
tar cJf $OUT/res.txz -C $R .
cat $R/log.txt
for b in crit multi; do echo "## $b"; grep -E "^ +reactor |highest req/s|^sustained" $R/$b.txt; done
