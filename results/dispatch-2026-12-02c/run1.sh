#!/bin/bash
# dispatch3 call 1: one criterion for both servers (schedule-lag p99 <= 1 ms, all ok); fake server and
# serve-sim swept past where either could hold, with the servers' own CPU, write lag and queue;
# tl-new (reads stamped when they return) and tl-ts (kernel receive time) in the same call.
set -u
D=bin/dispatch3
for b in new ts; do xz -dc $D/tl-$b.xz > /tmp/tl-$b && chmod +x /tmp/tl-$b; done
R=/tmp/res; mkdir -p $R
{ pwd; cat $D/commits.txt; nproc; uname -a; ulimit -n; cat /proc/loadavg; } > $R/host.txt 2>&1
C="taskset -c 2,3"
common="--sim-config results/bench-client-2026-12-01/serve-sim-fast.yaml --server-cpus 8,9,10,11 --itl-rate 0 --clients reactor"
timeout -s TERM 100 $C /tmp/tl-new bench-client $common --stages streams,sim --rates 6000,9000,12000 --duration 3s \
  --sim-rates 500,1000,2500,3500,5000,6500 --sim-duration 3s --json-out $R/new.json > $R/new.txt 2> $R/new.log
echo "new rc=$?" >> $R/log.txt
timeout -s TERM 60 $C /tmp/tl-ts bench-client $common --stages streams,sim --rates 6000,12000 --duration 3s \
  --sim-rates 500,1000,2500,5000 --sim-duration 3s --json-out $R/ts.json > $R/ts.txt 2> $R/ts.log
echo "ts rc=$?" >> $R/log.txt
cat /proc/loadavg >> $R/host.txt
cp $D/run1.sh $R/
tar cJf $OUT/res1.txz -C $R .
cat $R/log.txt; for b in new ts; do echo "## $b"; grep -E "^ +reactor |highest req/s|^sustained" $R/$b.txt; done
