#!/bin/bash
# dispatch4 call 2: after call 1 (run.sh) found serve-sim 7,200 req/s against the fake server's
# 12,000 (the highest tried), the client spending ~1 core in connect(2) and "too many open files"
# at 20,000 fds from 9,000 req/s: the same config with the fd limit raised and the ephemeral port
# range widened (1024-65535), CPU profiles of the client and of every serve-sim child, the kernel's
# TCP counters over the sim sweep; the fake server swept higher to find its limit.
set -u
H=results/dispatch-2026-12-02d
OUT=${OUT:?}
BIN=${BIN:-}
if [ -z "$BIN" ]; then xz -dc bin/dispatch4/transferlab.xz > /tmp/tl && chmod +x /tmp/tl && BIN=/tmp/tl; fi
CLIENT_CPUS=${CLIENT_CPUS:-2,3}
SERVER_CPUS=${SERVER_CPUS:-4,5,6,7,8,9,10,11,12,13,14,15}
RATES=${RATES:-12000,13500,15000}
SIM_RATES=${SIM_RATES:-6500,7200,8000,9000}
DUR=${DUR:-3s}
X=${X:-128}
CFG=$H/serve-sim-capable.yaml
ulimit -Hn 1048576 2>/dev/null; ulimit -Sn $(ulimit -Hn) 2>/dev/null
if [ "$(id -u)" = 0 ] && [ -z "${NO_SYSCTL:-}" ]; then
  sysctl -qw net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535
  sysctl -qw net.ipv4.ip_local_port_range="1024 65535"
fi
{ pwd; cat bin/dispatch4/commit.txt 2>/dev/null; echo "bin $BIN"; nproc; uname -a; echo "ulimit -n $(ulimit -Sn) (hard $(ulimit -Hn))";
  echo "somaxconn $(cat /proc/sys/net/core/somaxconn) syn_backlog $(cat /proc/sys/net/ipv4/tcp_max_syn_backlog) port range $(cat /proc/sys/net/ipv4/ip_local_port_range)";
  echo "tcp_wmem $(cat /proc/sys/net/ipv4/tcp_wmem) tcp_rmem $(cat /proc/sys/net/ipv4/tcp_rmem)";
  echo "client cpus $CLIENT_CPUS, server cpus $SERVER_CPUS, ops ${X}x, $DUR per load"; cat /proc/loadavg; } > $OUT/host.txt 2>&1
common="--server-cpus $SERVER_CPUS --itl-rate 0 --clients reactor --sim-config $CFG --sim-speedup $X"
t0=$(date +%s)
timeout -s TERM ${LIMIT:-120} taskset -c $CLIENT_CPUS $BIN bench-client $common --stages streams --rates $RATES --duration $DUR \
  --json-out $OUT/fake.json > $OUT/fake.txt 2> $OUT/bench.log
echo "fake rc=$? in $(( $(date +%s) - t0 )) s" >> $OUT/host.txt
P=/tmp/prof; mkdir -p $P
cat /proc/net/netstat /proc/net/snmp > $P/net-before.txt
t0=$(date +%s)
timeout -s TERM ${LIMIT:-120} taskset -c $CLIENT_CPUS $BIN bench-client $common --stages sim --sim-rates $SIM_RATES --sim-duration $DUR \
  --cpuprofile $P/client.prof --server-cpuprofile $P/server --json-out $OUT/sim.json > $OUT/sim.txt 2>> $OUT/bench.log
echo "sim rc=$? in $(( $(date +%s) - t0 )) s" >> $OUT/host.txt
cat /proc/net/netstat /proc/net/snmp > $P/net-after.txt
cat /proc/loadavg >> $OUT/host.txt
tar czf $OUT/prof.tgz -C $P .
cat $OUT/host.txt; grep -E "^ +reactor |highest req/s, sched|sustained:" $OUT/fake.txt $OUT/sim.txt
