#!/bin/bash
# dispatch4 call 3: call 2 found the client's one event loop saturated against serve-sim (~0.7 M
# token events/s: one recvmsg(2) and one chunk decode per event) while it still sent on time up to
# 9,000 req/s, and the fake server sustained 15,000 (the highest tried). Side by side in one call,
# as call 2 (fd limit, port range): tl-1 (main, one event loop) and tl-n (the same plus
# ../loops-2026-12-02/multi-loop.patch: one loop per GOMAXPROCS, 2 here), both servers, loads
# above the last sustained ones; client CPU profiles and the kernel's TCP counters per binary.
set -u
H=results/dispatch-2026-12-02d
OUT=${OUT:?}
B=${B:-bin/dispatch4}
for b in 1 n; do xz -dc $B/tl-$b.xz > /tmp/tl-$b && chmod +x /tmp/tl-$b; done
CLIENT_CPUS=${CLIENT_CPUS:-2,3}
SERVER_CPUS=${SERVER_CPUS:-4,5,6,7,8,9,10,11,12,13,14,15}
RATES=${RATES:-15000,18000,21000}
SIM_RATES=${SIM_RATES:-9000,10500,12000}
DUR=${DUR:-3s}
CFG=$H/serve-sim-capable.yaml
ulimit -Hn 1048576 2>/dev/null; ulimit -Sn $(ulimit -Hn) 2>/dev/null
if [ "$(id -u)" = 0 ] && [ -z "${NO_SYSCTL:-}" ]; then
  sysctl -qw net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535 net.ipv4.ip_local_port_range="1024 65535"
fi
{ pwd; cat $B/commit.txt 2>/dev/null; nproc; uname -a; echo "ulimit -n $(ulimit -Sn) (hard $(ulimit -Hn))";
  echo "somaxconn $(cat /proc/sys/net/core/somaxconn) syn_backlog $(cat /proc/sys/net/ipv4/tcp_max_syn_backlog) port range $(cat /proc/sys/net/ipv4/ip_local_port_range)";
  echo "client cpus $CLIENT_CPUS, server cpus $SERVER_CPUS, ops 128x, $DUR per load"; cat /proc/loadavg; } > $OUT/host.txt 2>&1
P=/tmp/prof; mkdir -p $P
for b in 1 n; do
  cat /proc/net/netstat /proc/net/snmp > $P/net-$b-before.txt
  t0=$(date +%s)
  timeout -s TERM ${LIMIT:-75} taskset -c $CLIENT_CPUS /tmp/tl-$b bench-client --server-cpus $SERVER_CPUS --itl-rate 0 --clients reactor \
    --sim-config $CFG --sim-speedup 128 --stages streams,sim --rates $RATES --duration $DUR --sim-rates $SIM_RATES --sim-duration $DUR \
    --cpuprofile $P/client-$b.prof --json-out $OUT/$b.json > $OUT/$b.txt 2>> $OUT/bench.log
  echo "tl-$b rc=$? in $(( $(date +%s) - t0 )) s" >> $OUT/host.txt
  cat /proc/net/netstat /proc/net/snmp > $P/net-$b-after.txt
done
cat /proc/loadavg >> $OUT/host.txt
tar czf $OUT/prof.tgz -C $P .
cat $OUT/host.txt; grep -E "^ +reactor |sustained:" $OUT/1.txt $OUT/n.txt
