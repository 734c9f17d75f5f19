#!/usr/bin/env bash
# Coverage of the stated 95 % intervals on an idle host, the design side by side, and the
# quickstart on 2 idle cores and on 2 cores with background load — all on the device machine's
# 16-core host (no GPU used), each process pinned to its own 2 cores so none disturbs another.
# Prepare here:  CGO_ENABLED=0 go test -c -ldflags='-s -w' -o bin/experiment.test ./experiment
#                CGO_ENABLED=0 go build -ldflags='-s -w' -o bin/transferlab ./cmd/transferlab
#                git rev-parse HEAD > bin/commit.txt; xz -3 bin/experiment.test bin/transferlab
# Run there (repository root, bin/ carried):  OUT=$OUT [CAPACITY_CONFIG=configs/X.yaml] bash results/coverage-2026-12-02b/run.sh
set -u
# Every process is stopped after $lim s so the outputs are packed before the device call's 600 s end.
lim=${LIMIT_S:-520}
root=$(pwd)
o=$OUT/coverage; mkdir -p $o
xz -d -T4 bin/experiment.test.xz bin/transferlab.xz && chmod +x bin/experiment.test bin/transferlab
{ echo "commit: $(cat bin/commit.txt)"; nproc; uptime; lscpu | grep -E 'Model name|^CPU\(s\)'; } > $o/host.txt
cd experiment
# 20 runs in 5 slices of 4 (~1.5 min a run with the noise model's 3 blocks of 4 arms: ~6 min a slice).
for k in 0 1 2 3 4; do
  c0=$((2*k)); c1=$((2*k+1))
  TRANSFERLAB_COVERAGE_RUNS=4 TRANSFERLAB_COVERAGE_FIRST=$((4*k)) TRANSFERLAB_COVERAGE_OUT=$o/coverage-$k.md \
    timeout $lim taskset -c $c0,$c1 env GOMAXPROCS=2 ../bin/experiment.test -test.run '^TestIntervalCoverage$' -test.v -test.timeout 20m > $o/coverage-$k.log 2>&1 &
done
TRANSFERLAB_DESIGN_CHECK=1 TRANSFERLAB_COVERAGE_OUT=$o/design-efficiency.txt \
  timeout $lim taskset -c 10,11 env GOMAXPROCS=2 ../bin/experiment.test -test.run '^TestDesignEfficiency$' -test.v -test.timeout 20m > $o/design.log 2>&1 &
cd $root
# The quickstart on 2 idle cores, as the README runs it.
( timeout $lim taskset -c 12,13 bin/transferlab run configs/quickstart.yaml --out /tmp/qs-idle > $o/quickstart-idle.txt 2>&1; echo "exit $?" >> $o/quickstart-idle.txt
  cp /tmp/qs-idle/report.md $o/quickstart-idle-report.md; cp /tmp/qs-idle/results.json $o/quickstart-idle-results.json
  # Then, on the same idle cores, the config that searches capacity with long probes, if given.
  if [ -n "${CAPACITY_CONFIG:-}" ]; then
    left=$((lim - SECONDS - 5))
    timeout $left taskset -c 12,13 bin/transferlab run "$CAPACITY_CONFIG" --out /tmp/cap-idle > $o/capacity-idle.txt 2>&1; echo "exit $?" >> $o/capacity-idle.txt
    cp /tmp/cap-idle/report.md $o/capacity-idle-report.md; cp /tmp/cap-idle/results.json $o/capacity-idle-results.json
  fi ) &
# The quickstart on 2 cores shared with two CPU-bound loops (load average ~3 on those 2 cores).
( taskset -c 14,15 sh -c 'while :; do :; done' & h1=$!; taskset -c 14,15 sh -c 'while :; do :; done' & h2=$!
  timeout $lim taskset -c 14,15 bin/transferlab run configs/quickstart.yaml --out /tmp/qs-loaded > $o/quickstart-loaded.txt 2>&1; echo "exit $?" >> $o/quickstart-loaded.txt
  kill $h1 $h2; cp /tmp/qs-loaded/report.md $o/quickstart-loaded-report.md; cp /tmp/qs-loaded/results.json $o/quickstart-loaded-results.json ) &
wait
uptime >> $o/host.txt
grep -h "intervals (" $o/coverage-*.md > $o/summary.txt
cd $OUT && tar czf coverage.tgz coverage && rm -rf coverage
