#!/usr/bin/env bash
# The real-time coverage check again, each real run set beside its virtual-time replay (the same
# cells, run factors and requests: TestVirtualReplayMatchesRun), on the device machine's 16-core
# host (no GPU used): seeds 100-119 (the runs of ../coverage-2026-12-02b) in 7 slices, each process
# pinned to its own 2 cores (cores 0-13; 14-15 left to the system). About 7 min of one device call
# (a run took ~2.1 min there in 2026-12-02b; 3 a slice). The virtual replay of today's noise predicts
# 120 of 120 intervals for these seeds (TRANSFERLAB_VIRTUAL_RUNS=20 go test ./experiment -run
# TestVirtualIntervalCoverage -v).
# Prepare here:  CGO_ENABLED=0 go test -c -ldflags='-s -w' -o bin/experiment.test ./experiment
#                git rev-parse HEAD > bin/commit.txt; xz -3 bin/experiment.test
# Run there (repository root, bin/ carried):  OUT=$OUT bash results/coverage-2026-12-02e/run.sh
# What comes back ($OUT/coverage.tgz): coverage-K.md (per slice: each interval, real and virtual
# side by side, then one row per cell: run factor and requests real and virtual, mean E2E real
# over virtual, step wall over model time), coverage-K.log, keep/results-SEED.json (each real
# run's results.json, each cell's run factor in manifest.server.<arm>.true_fractions),
# summary.txt and host.txt.
set -u
# Every process is stopped after $lim s so the outputs are packed before the device call's 600 s end.
lim=${LIMIT_S:-540}
o=$OUT/coverage; mkdir -p $o/keep
xz -d -T4 bin/experiment.test.xz && chmod +x bin/experiment.test
{ echo "commit: $(cat bin/commit.txt)"; nproc; uptime; lscpu | grep -E 'Model name|^CPU\(s\)'; } > $o/host.txt
cd experiment
# 20 runs: slices of 3 runs (~1.5 min a run: 3 blocks of 4 arms, then its virtual replay in seconds).
first=0
for k in 0 1 2 3 4 5 6; do
  n=3; [ $k -eq 6 ] && n=2
  c0=$((2*k)); c1=$((2*k+1))
  TRANSFERLAB_COVERAGE_RUNS=$n TRANSFERLAB_COVERAGE_FIRST=$first TRANSFERLAB_COVERAGE_OUT=$o/coverage-$k.md TRANSFERLAB_COVERAGE_KEEP=$o/keep \
    timeout $lim taskset -c $c0,$c1 env GOMAXPROCS=2 ../bin/experiment.test -test.run '^TestIntervalCoverage$' -test.v -test.timeout 20m > $o/coverage-$k.log 2>&1 &
  first=$((first + n))
done
wait
uptime >> $o/host.txt
grep -h "intervals (" $o/coverage-*.md > $o/summary.txt
cd $OUT && tar czf coverage.tgz coverage && rm -rf coverage
