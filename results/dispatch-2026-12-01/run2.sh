#!/bin/bash
# dispatch call 2: head-of-line old (main) vs new (comment lines dropped), and the new binary's sweeps.
set -u
D=.dispatch-dev
for v in o n; do gunzip -c $D/tl$v.gz > /tmp/tl$v && chmod +x /tmp/tl$v; done
{ nproc; uname -a; cat /proc/loadavg; } > $OUT/host.txt 2>&1
C="taskset -c 2,3"
for i in 1 2; do for v in o n; do
  echo "=== hol binary $v run $i" >> $OUT/hol.txt
  timeout 30 $C /tmp/tl$v bench-client --server-cpus 8,9,10,11 --clients reactor --stages hol >> $OUT/hol.txt 2>> $OUT/hol.log
done; done
timeout 70 $C /tmp/tln bench-client --sim-config $D/serve-sim-fast.yaml --server-cpus 8,9,10,11 --itl-rate 0 --clients reactor --stages streams,sim --rates 2500,3000 --duration 4s --sim-rates 500,750,1000 --sim-duration 4s > $OUT/sweep.txt 2> $OUT/sweep.log
cat /proc/loadavg >> $OUT/host.txt
