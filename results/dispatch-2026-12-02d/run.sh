#!/bin/bash
# dispatch4: issue 17 item 1's target (sustained rate at schedule-lag p99 <= 1 ms, all ok, against
# serve-sim within 20 % of the fake server's) against a serve-sim that holds the load: 16,384 seqs a
# step, every op 128x (serve-sim-capable.yaml), server children on 12 cores, the client on 2.
# One device call from the repo root: bash results/dispatch-2026-12-02d/run.sh (carry bin/dispatch4).
# Tiny local try: BIN=bin/transferlab CLIENT_CPUS=0 SERVER_CPUS=1 RATES=200 SIM_RATES=100 DUR=1s OUT=/tmp/x bash .../run.sh
set -u
H=results/dispatch-2026-12-02d
OUT=${OUT:?}
BIN=${BIN:-}
if [ -z "$BIN" ]; then xz -dc bin/dispatch4/transferlab.xz > /tmp/tl && chmod +x /tmp/tl && BIN=/tmp/tl; fi
CLIENT_CPUS=${CLIENT_CPUS:-2,3}
SERVER_CPUS=${SERVER_CPUS:-4,5,6,7,8,9,10,11,12,13,14,15}
RATES=${RATES:-6000,9000,10500,12000}
SIM_RATES=${SIM_RATES:-5000,6500,7200,8000,9000,10500}
DUR=${DUR:-3s}
X=${X:-128}
CFG=$H/serve-sim-capable.yaml
ulimit -n 1048576 2>/dev/null || ulimit -n 65536 2>/dev/null
# a listen backlog that holds a burst of new connections (Go listens with somaxconn)
[ "$(id -u)" = 0 ] && [ -z "${NO_SYSCTL:-}" ] && sysctl -qw net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535
{ pwd; cat bin/dispatch4/commit.txt 2>/dev/null; echo "bin $BIN"; nproc; uname -a; echo "ulimit -n $(ulimit -n)";
  echo "somaxconn $(cat /proc/sys/net/core/somaxconn) syn_backlog $(cat /proc/sys/net/ipv4/tcp_max_syn_backlog)";
  echo "client cpus $CLIENT_CPUS, server cpus $SERVER_CPUS, ops ${X}x, $DUR per load"; cat /proc/loadavg; } > $OUT/host.txt 2>&1
ov=""; for op in embedding rmsnorm qkv_proj rotary attention o_proj gate_up_proj silu_mul down_proj lm_head sampling; do ov="$ov --override $op=$X"; done
$BIN serve-sim --config $CFG $ov --capacity 32:128 > $OUT/capacity.txt 2>&1
t0=$(date +%s)
timeout -s TERM ${LIMIT:-300} taskset -c $CLIENT_CPUS $BIN bench-client --server-cpus $SERVER_CPUS --itl-rate 0 --clients reactor \
  --sim-config $CFG --sim-speedup $X --stages streams,sim --rates $RATES --duration $DUR \
  --sim-rates $SIM_RATES --sim-duration $DUR --json-out $OUT/bench.json > $OUT/bench.txt 2> $OUT/bench.log
echo "bench-client rc=$? in $(( $(date +%s) - t0 )) s" >> $OUT/host.txt
# where the client's CPU goes against serve-sim at one load (the parent bench-client process only)
PROF_RATE=${PROF_RATE:-9000}
if [ "$PROF_RATE" != 0 ]; then
  timeout -s TERM 60 taskset -c $CLIENT_CPUS $BIN bench-client --server-cpus $SERVER_CPUS --itl-rate 0 --clients reactor \
    --sim-config $CFG --sim-speedup $X --stages sim --sim-rates $PROF_RATE --sim-duration $DUR \
    --cpuprofile $OUT/client-$PROF_RATE.prof > $OUT/prof.txt 2>&1
  echo "profile run rc=$?" >> $OUT/host.txt
fi
cat /proc/loadavg >> $OUT/host.txt
cat $OUT/capacity.txt $OUT/host.txt; grep -E "^ +reactor |highest req/s|sustained" $OUT/bench.txt
