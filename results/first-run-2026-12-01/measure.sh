#!/usr/bin/env bash
# First run of the quickstart on a cold module and build cache, as a newcomer's fresh clone.
# Usage: DIR=/tmp/fr; git clone REPO $DIR/clone; DIR=$DIR measure.sh > transcript.txt 2>&1
set -u
cd $DIR/clone
echo "\$ git log --oneline -1"; git log --oneline -1
echo "\$ nproc; go version"; nproc; go version
echo "\$ uptime   # load before"; uptime
export GOMODCACHE=$(mktemp -d) GOCACHE=$(mktemp -d)
echo "GOMODCACHE and GOCACHE: fresh empty folders"
echo "\$ time nice -n 10 go run ./cmd/transferlab run configs/quickstart.yaml --out $DIR/run"
start=$(date +%s)
{ time nice -n 10 go run ./cmd/transferlab run configs/quickstart.yaml --out $DIR/run >$DIR/stdout.txt 2>$DIR/stderr.txt; } 2>$DIR/time.txt
rc=$?
end=$(date +%s)
echo "exit status: $rc"
cat $DIR/time.txt
echo "wall: $((end-start)) s"
echo "\$ uptime   # load after"; uptime
echo "compiler warnings on stderr: $(grep -ciE "deprecated|cgo|gcc" $DIR/stderr.txt)"
echo "module cache: $(du -sh $GOMODCACHE | cut -f1); build cache: $(du -sh $GOCACHE | cut -f1)"
echo "----- stderr -----"; cat $DIR/stderr.txt
echo "----- stdout -----"; cat $DIR/stdout.txt
chmod -R u+w $GOMODCACHE; rm -rf $GOMODCACHE $GOCACHE
