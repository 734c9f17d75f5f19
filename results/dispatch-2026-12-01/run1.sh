#!/bin/bash
# dispatch: quickstart traced on 2 pinned cores (A) + bench-client serve-sim variants (B), concurrently.
set -u
D=.dispatch-dev
gunzip -c $D/tl.gz > /tmp/tl && chmod +x /tmp/tl
B=/tmp/tl
R=/tmp/res; mkdir -p $R
{ lscpu -e; nproc; uname -a; cat /proc/loadavg; cat /sys/kernel/debug/sched/base_slice_ns 2>&1; } > $R/host.txt 2>&1
q() { # name cpus env...
  local n=$1 c=$2; shift 2
  ( env "$@" GODEBUG=gctrace=1 timeout 330 taskset -c $c $B run configs/quickstart.yaml --out $R/q-$n > $R/q-$n.stdout 2> $R/q-$n.stderr; echo "rc=$?" >> $R/q-$n.stderr ) &
}
q base 2,3 TL_TRACE=$R/q-base.trace TL_TRACE_SECS=400
q slice 4,5 TL_TRACE=$R/q-slice.trace TL_TRACE_SECS=400 LG_SLICE_US=100
q spin 6,7 TL_TRACE=$R/q-spin.trace TL_TRACE_SECS=400 LG_SPIN_US=100
q plain 8,9 X=1
common="--sim-config $D/serve-sim-fast.yaml --server-cpus 12,13,14,15 --itl-rate 0"
(
for v in "X=1" "LG_SLICE_US=100" "LG_PIN=1" "LG_SPIN_US=100" "LG_PIN=1 LG_SLICE_US=100"; do
  echo "=== variant: $v" >> $R/b-variants.txt
  env $v timeout 60 taskset -c 10,11 $B bench-client $common --clients reactor --stages sim --sim-rates 500,1000,1500,2000 --sim-duration 4s >> $R/b-variants.txt 2>> $R/b-variants.log
  echo "rc=$?" >> $R/b-variants.txt
done
) &
wait
cat /proc/loadavg >> $R/host.txt
for n in base slice spin; do [ -f $R/q-$n.trace ] && $D/ana $R/q-$n.trace > $R/q-$n.ana 2>&1; LONG=1 $D/ana $R/q-$n.trace > $R/q-$n.long 2>&1; done
ls -la $R > $R/ls.txt
cp $R/q-base.trace $OUT/ 2>/dev/null
rm -f $R/*.trace
tar czf $OUT/res.tgz -C $R .
