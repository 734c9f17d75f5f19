#!/bin/bash
# dispatch 2026-12-02, call 2: the fixed client (new) against main before it (old), fake server and serve-sim.
set -u
D=bin/dispatch
for b in new old; do xz -dc $D/tl-$b.xz > /tmp/tl-$b && chmod +x /tmp/tl-$b; done
R=/tmp/res; mkdir -p $R
{ pwd; cat $D/commits.txt; nproc; uname -a; cat /proc/loadavg; } > $R/host.txt 2>&1
C="taskset -c 2,3"
common="--sim-config $D/serve-sim-fast.yaml --server-cpus 8,9,10,11 --itl-rate 0 --clients reactor"
echo "new: streams 2500-4000, sim 500-3000" >> $R/log.txt
timeout 150 $C /tmp/tl-new bench-client $common --stages streams,sim --rates 2500,3000,3500,4000 --duration 5s \
  --sim-rates 500,1000,1500,2000,2500,3000 --sim-duration 5s --json-out $R/new.json > $R/new.txt 2> $R/new.log; echo "rc=$?" >> $R/log.txt
echo "old: streams 3000,3500, sim 500-1500" >> $R/log.txt
timeout 90 $C /tmp/tl-old bench-client $common --stages streams,sim --rates 3000,3500 --duration 5s \
  --sim-rates 500,1000,1500 --sim-duration 5s --json-out $R/old.json > $R/old.txt 2> $R/old.log; echo "rc=$?" >> $R/log.txt
echo "new again: sim 1000-3000" >> $R/log.txt
timeout 90 $C /tmp/tl-new bench-client $common --stages sim --sim-rates 1000,1500,2000,2500,3000 --sim-duration 5s --json-out $R/new2.json > $R/new2.txt 2> $R/new2.log; echo "rc=$?" >> $R/log.txt
cat /proc/loadavg >> $R/host.txt
tar cJf $OUT/res2.txz -C $R .
for f in new old new2; do echo "## $f"; grep -E "^  +reactor |highest req/s at lag" $R/$f.txt; done
