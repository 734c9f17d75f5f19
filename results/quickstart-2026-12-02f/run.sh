#!/usr/bin/env bash
# The quickstart as the README runs it, on 2 idle pinned cores of the device machine's 16-core host
# (no GPU used; nothing else running during it), timed.
# Prepare here:  CGO_ENABLED=0 go build -ldflags='-s -w' -o bin/transferlab ./cmd/transferlab
#                git rev-parse HEAD > bin/tl-commit.txt; xz -3 bin/transferlab
# Run there (repository root, bin/ carried):  OUT=$OUT bash results/quickstart-2026-12-02f/run.sh
set -u
o=$OUT/quickstart; mkdir -p $o
xz -d -T4 -k bin/transferlab.xz && chmod +x bin/transferlab
{ echo "commit: $(cat bin/tl-commit.txt)"; nproc; uptime; lscpu | grep -E 'Model name|^CPU\(s\)'; } > $o/host.txt
start=$(date +%s.%N)
taskset -c 2,3 env GOMAXPROCS=2 bin/transferlab run configs/quickstart.yaml --out /tmp/qs/run > $o/console.txt 2>&1
rc=$?
end=$(date +%s.%N)
awk -v a=$start -v b=$end -v rc=$rc "BEGIN{printf \"rc %d wall_s %.1f\\n\", rc, b-a}" >> $o/console.txt
uptime >> $o/host.txt
cp /tmp/qs/run/results.json /tmp/qs/run/report.md $o/ 2>/dev/null
cp /tmp/qs/run/report.html $o/ 2>/dev/null
cd $OUT && tar czf quickstart.tgz quickstart && rm -rf quickstart
