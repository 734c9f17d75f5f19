#!/bin/bash
# dispatch5: the reactor's per-event read path against serve-sim, side by side in one call.
# Each binary bin/dispatch5/tl-NAME.xz (NAMES, default "old new loops": main before and after the
# read-path change, and after it with ../loops-2026-12-02/multi-loop.patch, one event loop per
# GOMAXPROCS; bin/dispatch5/commits.txt) runs one bench-client, at most LIMIT s (default 70): the fake server at RATES
# and serve-sim at SIM_RATES, DUR per load, with a client CPU profile, under the host settings
# of ../dispatch-2026-12-02d/run2.sh and run3.sh (fd limit raised as far as the VM lets,
# ephemeral ports 1024-65535, client on cores 2,3, server children on 4-15,
# serve-sim-capable.yaml at --sim-speedup 128). From the repo root:
#   OUT=/some/dir bash results/dispatch-2026-12-02e/run.sh
# Small local check: LIMIT=60 NAMES=new RATES=300 SIM_RATES=200 DUR=1s CLIENT_CPUS=0,1 SERVER_CPUS=0,1 NO_SYSCTL=1
set -u
H=results/dispatch-2026-12-02e
OUT=${OUT:?}
B=${B:-bin/dispatch5}
NAMES=${NAMES:-old new loops}
CLIENT_CPUS=${CLIENT_CPUS:-2,3}
SERVER_CPUS=${SERVER_CPUS:-4,5,6,7,8,9,10,11,12,13,14,15}
RATES=${RATES:-15000,18000}
SIM_RATES=${SIM_RATES:-9000,10500,12000}
DUR=${DUR:-3s}
CFG=$H/serve-sim-capable.yaml
for b in $NAMES; do xz -dc $B/tl-$b.xz > /tmp/tl-$b && chmod +x /tmp/tl-$b || exit 1; done
ulimit -Hn 1048576 2>/dev/null; ulimit -Sn $(ulimit -Hn) 2>/dev/null
if [ "$(id -u)" = 0 ] && [ -z "${NO_SYSCTL:-}" ]; then
  sysctl -qw net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535 net.ipv4.ip_local_port_range="1024 65535"
fi
{ pwd; cat $B/commits.txt 2>/dev/null; nproc; uname -a; echo "ulimit -n $(ulimit -Sn) (hard $(ulimit -Hn))";
  echo "somaxconn $(cat /proc/sys/net/core/somaxconn) syn_backlog $(cat /proc/sys/net/ipv4/tcp_max_syn_backlog) port range $(cat /proc/sys/net/ipv4/ip_local_port_range)";
  echo "client cpus $CLIENT_CPUS, server cpus $SERVER_CPUS, ops 128x, $DUR per load, fake $RATES, serve-sim $SIM_RATES"; cat /proc/loadavg; } > $OUT/host.txt 2>&1
P=/tmp/prof; mkdir -p $P
for b in $NAMES; do
  cat /proc/net/netstat /proc/net/snmp > $P/net-$b-before.txt
  t0=$(date +%s)
  timeout -s TERM ${LIMIT:-70} taskset -c $CLIENT_CPUS /tmp/tl-$b bench-client --server-cpus $SERVER_CPUS --itl-rate 0 --clients reactor \
    --sim-config $CFG --sim-speedup 128 --stages streams,sim --rates $RATES --duration $DUR --sim-rates $SIM_RATES --sim-duration $DUR \
    --cpuprofile $P/client-$b.prof --json-out $OUT/$b.json > $OUT/$b.txt 2>> $OUT/bench.log
  echo "tl-$b rc=$? in $(( $(date +%s) - t0 )) s" >> $OUT/host.txt
  cat /proc/net/netstat /proc/net/snmp > $P/net-$b-after.txt
  go tool pprof -top -nodecount=40 /tmp/tl-$b $P/client-$b.prof > $OUT/prof-$b.txt 2>/dev/null || true
done
cat /proc/loadavg >> $OUT/host.txt
tar czf $OUT/prof.tgz -C $P .
cat $OUT/host.txt; for b in $NAMES; do grep -E "^ +reactor |sustained:" $OUT/$b.txt; done
