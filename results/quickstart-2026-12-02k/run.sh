#!/usr/bin/env bash
# The quickstart as the README runs it (the session's final code), on the device machine's 16-core host (no GPU used), on
# 2 pinned cores that two CPU-bound loops share with it: the 2-core box "at load average ~3".
#   MODE=loaded (default): seeds 1..7 of configs/quickstart.yaml (only `seed:` changed, copies
#     written beside it), seven runs at once, each on its own 2 pinned cores (2-3 ... 14-15) with
#     two `while :; do :; done` loops pinned to the same 2 cores for the whole run (run queue on
#     those cores: the two loops + the run's own threads, ~3-4).
#   MODE=idle: the same seven runs with no loops (each on its own 2 idle pinned cores).
# /proc/stat is sampled before and after: each pair's busy share over the run is in host.txt.
# Prepare here:  CGO_ENABLED=0 go build -buildvcs=true -ldflags='-s -w' -o bin/transferlab ./cmd/transferlab
#                git rev-parse HEAD > bin/tl-commit.txt; xz -3 bin/transferlab
# Run there (repository root, bin/ carried):  MODE=loaded OUT=$OUT bash results/quickstart-2026-12-02k/run.sh
set -u
mode=${MODE:-loaded}
o=$OUT/$mode; mkdir -p $o
[ -x bin/transferlab ] || { xz -d -T4 -k bin/transferlab.xz && chmod +x bin/transferlab; }
{ echo "commit: $(cat bin/tl-commit.txt)"; echo "mode: $mode"; nproc; uptime; lscpu | grep -E 'Model name|^CPU\(s\)'; } > $o/host.txt
grep '^cpu[0-9]' /proc/stat > $o/stat-before.txt
one() { # seed cores config
  local s=$1 c=$2 cfg=$3 d=$o/seed-$1; mkdir -p $d
  local pids=""
  if [ "$mode" = loaded ]; then
    for _ in 1 2; do taskset -c $c timeout 500 sh -c 'while :; do :; done' & pids="$pids $!"; done
  fi
  local start=$(date +%s.%N)
  taskset -c $c env GOMAXPROCS=2 bin/transferlab run $cfg --out /tmp/qs/run-$s > $d/console.txt 2>&1
  local rc=$?
  local end=$(date +%s.%N)
  [ -n "$pids" ] && kill $pids 2>/dev/null
  awk -v a=$start -v b=$end -v rc=$rc "BEGIN{printf \"rc %d wall_s %.1f\\n\", rc, b-a}" >> $d/console.txt
  cp /tmp/qs/run-$s/results.json /tmp/qs/run-$s/report.md $d/ 2>/dev/null
}
k=0
for s in 1 2 3 4 5 6 7; do
  cfg=configs/quickstart.yaml
  if [ $s != 1 ]; then
    cfg=configs/quickstart-seed$s.yaml
    sed "s/^seed: 1\$/seed: $s/" configs/quickstart.yaml > $cfg
    grep -q "^seed: $s\$" $cfg || echo "seed $s not set" >> $o/host.txt
  fi
  c0=$((2+2*k)); one $s $c0,$((c0+1)) $cfg &
  k=$((k+1))
done
sleep 60; uptime >> $o/host.txt
wait
grep '^cpu[0-9]' /proc/stat > $o/stat-after.txt
uptime >> $o/host.txt
cd $OUT && tar czf $mode.tgz $mode && rm -rf $mode
