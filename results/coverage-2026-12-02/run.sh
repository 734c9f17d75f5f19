#!/usr/bin/env bash
# Coverage of the stated 95 % intervals on an idle host, the design side by side, and the
# quickstart on 2 idle cores and on 2 cores with background load — all on the device machine's
# 16-core host (no GPU used), each process pinned to its own 2 cores so none disturbs another.
# Prepare here:  CGO_ENABLED=0 go test -c -ldflags='-s -w' -o bin/experiment.test ./experiment
#                CGO_ENABLED=0 go build -ldflags='-s -w' -o bin/transferlab ./cmd/transferlab
#                git rev-parse HEAD > bin/commit.txt; xz -3 bin/experiment.test bin/transferlab
# Run there (repository root, bin/ carried):  OUT=$OUT bash results/coverage-2026-12-02/run.sh
set -u
root=$(pwd)
o=$OUT/coverage; mkdir -p $o
xz -d -T4 bin/experiment.test.xz bin/transferlab.xz && chmod +x bin/experiment.test bin/transferlab
{ echo "commit: $(cat bin/commit.txt)"; nproc; uptime; lscpu | grep -E 'Model name|^CPU\(s\)'; } > $o/host.txt
cd experiment
for k in 0 1 2 3; do
  c0=$((2*k)); c1=$((2*k+1))
  TRANSFERLAB_COVERAGE_RUNS=5 TRANSFERLAB_COVERAGE_FIRST=$((5*k)) TRANSFERLAB_COVERAGE_OUT=$o/coverage-$k.md \
    taskset -c $c0,$c1 env GOMAXPROCS=2 ../bin/experiment.test -test.run '^TestIntervalCoverage$' -test.v -test.timeout 20m > $o/coverage-$k.log 2>&1 &
done
TRANSFERLAB_DESIGN_CHECK=1 TRANSFERLAB_COVERAGE_OUT=$o/design-efficiency.txt \
  taskset -c 8,9 env GOMAXPROCS=2 ../bin/experiment.test -test.run '^TestDesignEfficiency$' -test.v -test.timeout 20m > $o/design.log 2>&1 &
cd $root
# The quickstart on 2 idle cores, as the README runs it.
( taskset -c 10,11 bin/transferlab run configs/quickstart.yaml --out /tmp/qs-idle > $o/quickstart-idle.txt 2>&1; echo "exit $?" >> $o/quickstart-idle.txt
  cp /tmp/qs-idle/report.md $o/quickstart-idle-report.md; cp /tmp/qs-idle/results.json $o/quickstart-idle-results.json ) &
# The quickstart on 2 cores shared with two CPU-bound loops (load average ~3 on those 2 cores).
( taskset -c 12,13 sh -c 'while :; do :; done' & h1=$!; taskset -c 12,13 sh -c 'while :; do :; done' & h2=$!
  taskset -c 12,13 bin/transferlab run configs/quickstart.yaml --out /tmp/qs-loaded > $o/quickstart-loaded.txt 2>&1; echo "exit $?" >> $o/quickstart-loaded.txt
  kill $h1 $h2; cp /tmp/qs-loaded/report.md $o/quickstart-loaded-report.md; cp /tmp/qs-loaded/results.json $o/quickstart-loaded-results.json ) &
# The quickstart with the capacity search given room (budget 2m30s instead of 15s), 2 idle cores.
sed 's/^  budget: 15s$/  budget: 2m30s/' configs/quickstart.yaml > configs/quickstart-search.yaml
grep 'budget:' configs/quickstart-search.yaml > $o/quickstart-search-budget.txt
( taskset -c 14,15 bin/transferlab run configs/quickstart-search.yaml --out /tmp/qs-search > $o/quickstart-search.txt 2>&1; echo "exit $?" >> $o/quickstart-search.txt
  cp /tmp/qs-search/report.md $o/quickstart-search-report.md; cp /tmp/qs-search/results.json $o/quickstart-search-results.json ) &
wait
uptime >> $o/host.txt
grep -h "intervals (" $o/coverage-*.md > $o/summary.txt
cd $OUT && tar czf coverage.tgz coverage && rm -rf coverage
