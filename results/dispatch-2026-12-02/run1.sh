#!/bin/bash
# dispatch 2026-12-02, call 1: where late sends' time goes against serve-sim (probe + trace) and switches.
set -u
D=bin/dispatch
xz -dc $D/tl.xz > /tmp/tl && chmod +x /tmp/tl
xz -dc $D/ana.xz > /tmp/ana && chmod +x /tmp/ana
R=/tmp/res; mkdir -p $R/trace
{ pwd; git log -1 --format=%H 2>&1; lscpu -e; nproc; uname -a; cat /proc/loadavg; cat /sys/kernel/debug/sched/base_slice_ns 2>&1; } > $R/host.txt 2>&1
C="taskset -c 2,3"
common="--sim-config $D/serve-sim-fast.yaml --server-cpus 8,9,10,11 --itl-rate 0 --clients reactor --stages sim --sim-duration 4s"
v() { # name env...
  local n=$1; shift
  mkdir -p $R/$n
  echo "=== $n: $* rates ${RATES:-500,1000,1500}" >> $R/sim.txt
  env LG_PROBE=1 LG_PROBE_DIR=$R/$n "$@" timeout 80 $C /tmp/tl bench-client $common --sim-rates ${RATES:-500,1000,1500} >> $R/sim.txt 2>> $R/sim.log
  echo "rc=$?" >> $R/sim.txt
}
timeout 40 $C /tmp/tl bench-client --server-cpus 8,9,10,11 --itl-rate 0 --clients reactor --stages streams --rates 2500,3000 --duration 4s > $R/fake.txt 2>&1
v base X=1
RATES=1000 v trace TL_TRACE=$R/trace/t.trace TL_TRACE_SECS=2 TL_TRACE_DELAY_MS=1500
v fastconn LG_FASTCONN=50
v fifo LG_FIFO=1
v fifo3 LG_FIFO=1 GOMAXPROCS=3
v nice LG_LOOPNICE=10
v nice3 LG_LOOPNICE=10 GOMAXPROCS=3
cat /proc/loadavg >> $R/host.txt
/tmp/ana $R/trace/t.trace > $R/trace/ana.txt 2>&1
ls -la $R/trace >> $R/host.txt
xz -T8 -6 $R/trace/t.trace
[ $(stat -c %s $R/trace/t.trace.xz) -gt 12000000 ] && rm $R/trace/t.trace.xz
tar cJf $OUT/res.txz -C $R .
grep -E "^===|  reactor  " $R/sim.txt; grep -A3 "client  offered" $R/fake.txt | head -4; tail -1 $R/trace/ana.txt | cut -c1-1500
