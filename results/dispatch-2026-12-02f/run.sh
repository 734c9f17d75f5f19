#!/bin/bash
# dispatch9: which side limits bench-client against serve-sim at 9,000-15,000 req/s (the server's
# CPUs or the client's 2), and what several event loops and delayed ACKs on the client change.
# Binary: bin/dispatch9/transferlab.xz, built from main at 3133702 with experiment.patch applied
# (calls 1 and 2; call 3 also column.patch, a bench-client column since dropped; host.txt names
# them by the local commits 8737ae9 and 0e45dc6, which are not on main):
#   git checkout 3133702 && git apply results/dispatch-2026-12-02f/experiment.patch
#   CGO_ENABLED=0 go build -ldflags='-s -w' -o bin/dispatch9/transferlab ./cmd/transferlab && xz -f bin/dispatch9/transferlab
# experiment.patch makes the reactor read TL_LOOPS (event loops, results/loops-2026-12-02/multi-loop.patch;
# default 1) and TL_QUICKACK0=1 (TCP_QUICKACK 0, delayed-ACK mode, on each connection once its
# request is written); main has neither. Each case is one bench-client (one stage, one
# load, DUR), client pinned with taskset, server children with --server-cpus, with a sampler beside
# it writing /proc/stat (per CPU), the client's and its children's /proc/PID/stat and /proc/net/snmp's
# Tcp line every 0.25 s; analyse.py turns those into user / system / softirq / idle per CPU group
# over the load's busy stretch (analysis.txt).
# Device call (the tool sends the session's checkout, so run.sh, the yaml and the binary were copied
# into its ignored bin/dispatch9/ and run with H=bin/dispatch9), carry ["bin/dispatch9"]:
#   OUT=$OUT LIMIT=20 H=bin/dispatch9 bash bin/dispatch9/run.sh                    # call 2 (default CASES)
#   S=4,...,15; OUT=$OUT LIMIT=16 H=bin/dispatch9 CASES="seg:12000:1:0:2,3:$S seg:15000:1:0:2,3:$S \
#     sim:10500:1:0:2,3:0,1,$S sim:9000:1:1:2,3:$S" bash bin/dispatch9/run.sh      # call 3
# Small local check: CASES="sim:300:1:0:0,1:0,1" DUR=1s NO_SYSCTL=1 OUT=/tmp/o bash results/dispatch-2026-12-02f/run.sh
set -u
H=${H:-results/dispatch-2026-12-02f}
OUT=${OUT:?}
B=${B:-bin/dispatch9}
DUR=${DUR:-4s}
CFG=$H/serve-sim-capable.yaml
S=4,5,6,7,8,9,10,11,12,13,14,15
# stage (sim: serve-sim; streams: the fake server, events back to back; seg: the fake server with
# SEG_ITL, default 7ms, between a stream's events, one segment each, as serve-sim's steps):rate:loops:quickack0:client cpus:server cpus
CASES=${CASES:-"sim:9000:1:0:2,3:$S sim:9000:2:0:2,3:$S sim:9000:1:1:2,3:$S sim:9000:2:1:2,3:$S sim:12000:1:0:2,3:$S sim:12000:2:1:2,3:$S sim:12000:4:1:0,1,2,3:$S sim:15000:4:1:0,1,2,3:$S streams:18000:1:0:2,3:$S streams:18000:2:1:2,3:$S streams:21000:2:1:2,3:$S sim:1000:1:0:2,3:$S sim:1000:2:1:2,3:$S"}
xz -dc $B/transferlab.xz > /tmp/tl && chmod +x /tmp/tl || exit 1
[ -z "${NO_SYSCTL:-}" ] && [ "$(id -u)" = 0 ] && sysctl -qw fs.nr_open=1048576 2>/dev/null; ulimit -Hn 1048576 2>/dev/null; ulimit -Sn $(ulimit -Hn) 2>/dev/null
if [ "$(id -u)" = 0 ] && [ -z "${NO_SYSCTL:-}" ]; then
  sysctl -qw net.core.somaxconn=65535 net.ipv4.tcp_max_syn_backlog=65535 net.ipv4.ip_local_port_range="1024 65535"
fi
W=/tmp/d9; rm -rf $W; mkdir -p $W
{ pwd; cat $B/commits.txt 2>/dev/null; nproc; uname -a; echo "ulimit -n $(ulimit -Sn) (hard $(ulimit -Hn))";
  echo "somaxconn $(cat /proc/sys/net/core/somaxconn) port range $(cat /proc/sys/net/ipv4/ip_local_port_range)";
  echo "DUR $DUR CASES $CASES"; cat /proc/loadavg; } > $W/host.txt 2>&1
for c in $CASES; do
  IFS=: read -r st rate loops qa ccpu scpu <<< "$c"
  name=$st-$rate-L$loops-Q$qa-c$(echo $ccpu | tr -d ,)
  case $st in
    sim) args="--stages sim --sim-rates $rate --sim-duration $DUR" ;;
    seg) args="--stages streams --rates $rate --duration $DUR --itl ${SEG_ITL:-7ms}" ;; # the fake server in serve-sim's shape
    *) args="--stages streams --rates $rate --duration $DUR" ;;
  esac
  t0=$(date +%s.%N)
  TL_LOOPS=$loops TL_QUICKACK0=$qa timeout -s TERM ${LIMIT:-20} taskset -c $ccpu /tmp/tl bench-client \
    --server-cpus $scpu --itl-rate 0 --clients reactor --sim-config $CFG --sim-speedup 128 $args \
    --json-out $W/$name.json > $W/$name.txt 2> $W/$name.log &
  pid=$!
  ( while kill -0 $pid 2>/dev/null; do echo "T $(date +%s.%N)"; grep -E '^cpu[0-9]+ ' /proc/stat;
      for k in $(cat /proc/$pid/task/*/children 2>/dev/null); do echo "P $(cat /proc/$k/stat 2>/dev/null)";
        for g in $(cat /proc/$k/task/*/children 2>/dev/null); do echo "C $(cat /proc/$g/stat 2>/dev/null)"; done; done;
      awk '/^Tcp:/{n++; if(n==2) print "N " $0}' /proc/net/snmp; sleep 0.25; done ) > $W/$name.samples &
  spid=$!
  wait $pid; rc=$?; wait $spid
  echo "$name rc=$rc $(awk -v a=$t0 -v b=$(date +%s.%N) "BEGIN{printf \"%.1f\", b-a}") s" >> $W/host.txt
  grep -E '^  reactor ' $W/$name.txt | head -3 | sed "s/^/$name /" >> $W/summary.txt
done
cat /proc/loadavg >> $W/host.txt
cp $W/host.txt $W/summary.txt $OUT/ 2>/dev/null
tar czf $OUT/runs.tgz -C $W .
cat $W/host.txt $W/summary.txt
