#!/usr/bin/env bash
# The README's quickstart on the device machine's idle 16-core host (no GPU used), three runs side
# by side, each pinned to its own 2 cores: as the README runs it on 2 idle cores; on 2 cores shared
# with two CPU-bound loops (a load average of ~3 on those cores); and with the capacity search given
# room (capacity_search.budget 2m30s instead of the quickstart's 15s).
# Prepare here:  CGO_ENABLED=0 go build -ldflags='-s -w' -o bin/transferlab ./cmd/transferlab
#                git rev-parse HEAD > bin/commit.txt; xz -3 bin/transferlab
# Run there (repository root, bin/ carried):  OUT=$OUT bash results/quickstart-2026-12-02/run.sh
set -u
o=$OUT/quickstart; mkdir -p $o
xz -d -T4 bin/transferlab.xz && chmod +x bin/transferlab
{ echo "commit: $(cat bin/commit.txt)"; nproc; uptime; lscpu | grep -E 'Model name|^CPU\(s\)'; } > $o/host.txt
run() { # name cpus config
  local t0=$(date +%s.%N)
  taskset -c $2 bin/transferlab run $3 --out /tmp/qs-$1 > $o/$1-console.txt 2>&1; echo "exit $?" >> $o/$1-console.txt
  echo "wall $(echo "$(date +%s.%N) - $t0" | bc) s" >> $o/$1-console.txt
  cp /tmp/qs-$1/report.md $o/$1-report.md; cp /tmp/qs-$1/report.html $o/$1-report.html; cp /tmp/qs-$1/results.json $o/$1-results.json
}
run idle 0,1 configs/quickstart.yaml &
( taskset -c 2,3 sh -c 'while :; do :; done' & h1=$!; taskset -c 2,3 sh -c 'while :; do :; done' & h2=$!
  run loaded 2,3 configs/quickstart.yaml; kill $h1 $h2 ) &
sed 's/^  budget: 15s$/  budget: 2m30s/' configs/quickstart.yaml > configs/quickstart-search.yaml
grep -n 'budget:' configs/quickstart-search.yaml > $o/search-budget.txt
run search 4,5 configs/quickstart-search.yaml &
wait
uptime >> $o/host.txt
cd $OUT && tar czf quickstart.tgz quickstart && rm -rf quickstart
