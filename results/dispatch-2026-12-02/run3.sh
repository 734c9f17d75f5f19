#!/bin/bash
# dispatch 2026-12-02, call 3: the fixed client (claims under the lock, sends outside it).
set -u
D=bin/dispatch
for b in new cnt; do xz -dc $D/tl-$b.xz > /tmp/tl-$b && chmod +x /tmp/tl-$b; done
R=/tmp/res; mkdir -p $R
{ pwd; cat $D/commits.txt; nproc; uname -a; cat /proc/loadavg; } > $R/host.txt 2>&1
C="taskset -c 2,3"
common="--sim-config $D/serve-sim-fast.yaml --server-cpus 8,9,10,11 --itl-rate 0 --clients reactor"
timeout 120 $C /tmp/tl-new bench-client $common --stages streams,sim --rates 3000,3500,4000 --duration 5s \
  --sim-rates 500,750,1000,1500,2000 --sim-duration 5s --json-out $R/new.json > $R/new.txt 2> $R/new.log; echo "new rc=$?" >> $R/log.txt
timeout 60 $C /tmp/tl-cnt bench-client $common --stages sim --sim-rates 1000,1500 --sim-duration 5s > $R/cnt.txt 2> $R/cnt.log; echo "cnt rc=$?" >> $R/log.txt
cat /proc/loadavg >> $R/host.txt
tar cJf $OUT/res3.txz -C $R .
for f in new cnt; do echo "## $f"; grep -E "^  +reactor |highest req/s at lag" $R/$f.txt; done; grep DBG $R/cnt.log
