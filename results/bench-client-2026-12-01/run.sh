#!/bin/bash
# bench-client side-by-side run (loadgen-client branch); client on CPUs 2,3, server children on 8-11.
set -u
B=.lc-bench/transferlab
Y=.lc-bench/serve-sim-fast.yaml
O=$OUT
{ lscpu -e; nproc; uname -a; cat /proc/loadavg; } > $O/host.txt 2>&1
C="taskset -c 2,3"
common="--sim-config $Y --server-cpus 8,9,10,11 --itl-rate 0"
timeout 190 $C $B bench-client $common --clients reactor,lean --stages streams,memory,sim,hol --rates 1000,2000,2500,3000 --duration 5s \
  --sim-rates 200,500,1000,2000,2500 --sim-duration 5s --hol-duration 5s --in-flight 4000 --json-out $O/main.json > $O/main.txt 2> $O/main.log
echo "main rc=$?" >> $O/main.log
for v in "LG_LOOP_YIELD=1" "GOMAXPROCS=3" "LG_LOOP_YIELD=1 GOMAXPROCS=3" "LG_SPIN_YIELD=1" "GOGC=400" "CL=lean GOMAXPROCS=3"; do
  cl=reactor; case "$v" in CL=lean*) cl=lean;; esac
  echo "=== variant: $v (client $cl)" >> $O/variants.txt
  env $v timeout 40 $C $B bench-client $common --clients $cl --stages streams,sim --rates 2500,3000 --duration 4s --sim-rates 500,1000,2000 --sim-duration 4s >> $O/variants.txt 2>> $O/variants.log
  echo "rc=$?" >> $O/variants.txt
done
cat /proc/loadavg >> $O/host.txt
