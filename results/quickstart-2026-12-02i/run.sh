#!/usr/bin/env bash
# The quickstart as the README runs it, on the device machine's 16-core host (no GPU used), timed.
#   MODE=headline (default): one run, seed 1 (configs/quickstart.yaml as shipped), on 2 idle pinned
#     cores (2,3), nothing else running.
#   MODE=seeds: the same config with seed 2..7 (only `seed:` changed, copies written beside it),
#     six runs at once, each on its own 2 pinned cores (4-5 ... 14-15): the verdicts' and the
#     capacity search's spread over seeds in real time (their wall times are not the headline's:
#     six processes share the host's memory and caches).
# Prepare here:  CGO_ENABLED=0 go build -ldflags='-s -w' -o bin/transferlab ./cmd/transferlab
#                git rev-parse HEAD > bin/tl-commit.txt; xz -3 bin/transferlab
# Run there (repository root, bin/ carried):  MODE=headline OUT=$OUT bash results/quickstart-2026-12-02i/run.sh
set -u
mode=${MODE:-headline}
o=$OUT/$mode; mkdir -p $o
[ -x bin/transferlab ] || { xz -d -T4 -k bin/transferlab.xz && chmod +x bin/transferlab; }
{ echo "commit: $(cat bin/tl-commit.txt)"; echo "mode: $mode"; nproc; uptime; lscpu | grep -E 'Model name|^CPU\(s\)'; } > $o/host.txt
one() { # seed cores config
  local s=$1 c=$2 cfg=$3 d=$o/seed-$1; mkdir -p $d
  local start=$(date +%s.%N)
  taskset -c $c env GOMAXPROCS=2 bin/transferlab run $cfg --out /tmp/qs/run-$s > $d/console.txt 2>&1
  local rc=$?
  local end=$(date +%s.%N)
  awk -v a=$start -v b=$end -v rc=$rc "BEGIN{printf \"rc %d wall_s %.1f\\n\", rc, b-a}" >> $d/console.txt
  cp /tmp/qs/run-$s/results.json /tmp/qs/run-$s/report.md $d/ 2>/dev/null
}
if [ "$mode" = headline ]; then
  one 1 2,3 configs/quickstart.yaml
  cp /tmp/qs/run-1/report.html $o/seed-1/ 2>/dev/null
else
  k=0
  for s in 2 3 4 5 6 7; do
    sed "s/^seed: 1\$/seed: $s/" configs/quickstart.yaml > configs/quickstart-seed$s.yaml
    grep -q "^seed: $s\$" configs/quickstart-seed$s.yaml || echo "seed $s not set" >> $o/host.txt
    c0=$((4+2*k)); one $s $c0,$((c0+1)) configs/quickstart-seed$s.yaml &
    k=$((k+1))
  done
  wait
fi
uptime >> $o/host.txt
cd $OUT && tar czf $mode.tgz $mode && rm -rf $mode
