#!/bin/bash
# dispatch call 3: head-of-line split (during / apart long lines) on quiet pinned cores.
set -u
gunzip -c .dispatch-dev/tlh.gz > /tmp/tlh && chmod +x /tmp/tlh
cat /proc/loadavg > $OUT/host.txt
for i in 1 2 3; do
  echo "=== run $i" >> $OUT/hol.txt
  timeout 25 taskset -c 2,3 /tmp/tlh bench-client --server-cpus 8,9,10,11 --clients reactor --stages hol >> $OUT/hol.txt 2>> $OUT/hol.log
done
cat /proc/loadavg >> $OUT/host.txt
