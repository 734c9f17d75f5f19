#!/bin/bash
# longline device call: head-of-line check (comment vs data line, reactor, 100 req/s for 5 s,
# every 10th stream a 5 MiB line) before (7948b4d) and after (a17cabd) the data-line fix, two
# runs each, interleaved; then BenchmarkLongDataEvent and BenchmarkSSEParse of both commits.
# Client and benchmarks on CPUs 2,3; fake server children on 8-11.
set -u
D=bin/longline
unxz() { if command -v xz >/dev/null; then xz -dc "$1"; else python3 -c 'import lzma,sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$1"; fi; }
for c in 7948b4d a17cabd; do
  unxz $D/tl-$c.xz > /tmp/tl-$c && unxz $D/lg-$c.test.xz > /tmp/lg-$c.test && chmod +x /tmp/tl-$c /tmp/lg-$c.test || exit 1
done
{ nproc; cat /proc/loadavg; } > $OUT/host.txt
for run in 1 2; do
  for c in 7948b4d a17cabd; do
    echo "=== run $run, binary $c" >> $OUT/hol.txt
    timeout 40 taskset -c 2,3 /tmp/tl-$c bench-client --server-cpus 8,9,10,11 --clients reactor --stages hol --hol-lines comment,data >> $OUT/hol.txt 2>> $OUT/hol.log
  done
done
for c in 7948b4d a17cabd; do
  echo "=== binary $c" >> $OUT/bench.txt
  (cd loadgen && timeout 40 taskset -c 2,3 /tmp/lg-$c.test -test.run XXX -test.bench 'LongDataEvent|SSEParse$' -test.benchtime 1s -test.count 2) >> $OUT/bench.txt 2>&1
done
cat /proc/loadavg >> $OUT/host.txt
