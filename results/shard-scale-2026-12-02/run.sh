#!/bin/bash
# Shard scaling: N `transferlab run --shard i/N` processes, each pinned to its own 2 cores, replay one
# config's schedules against one serve-sim (pinned to other cores) from a shared --start-at; then
# `transferlab merge`; table.py reads the shard and merged folders and the simulator's truth.
#
#   run.sh BIN OUTDIR            the device run (16 cores: shards on 0-7, serve-sim on 8-15)
#   TINY=1 run.sh BIN OUTDIR     2-core smoke test: N = 1, 2 at 20-40 req/s per shard, no pinning
#
# For each N the config's offered loads are N × PER_SHARD (req/s), so every shard of every N sees the
# same per-shard rates and the sustained total rate can be compared across N. A fresh serve-sim per N
# (its truth and counters then count that N's requests alone). OUTDIR gets table.txt, host.txt, log.txt
# and small.tar.gz (every shard.json, shards.json, report.md and log; no records.jsonl or results.json,
# which are large); those stay in WORK (default: a temporary folder, removed unless KEEP=1).
set -u
B=$(realpath "$1")
O=$(realpath "$2")
HERE=$(dirname "$(realpath "$0")")
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$O" "$WORK"
if [ "${TINY:-0}" = 1 ]; then
	SHARDS=${SHARDS:-"1 2"}; PER_SHARD=${PER_SHARD:-"20 40"}; DURATION=${DURATION:-1s}; WARMUP=${WARMUP:-500ms}; PIN=${PIN:-0}
else
	SHARDS=${SHARDS:-"1 2 4"}; PER_SHARD=${PER_SHARD:-"500 1000 2000 3000 4000 6000 8000"}; DURATION=${DURATION:-1500ms}; WARMUP=${WARMUP:-500ms}; PIN=${PIN:-1}
fi
GAP=${GAP:-1s}
LEAD=${LEAD:-6} # seconds from now to the shared --start-at (every shard's start-up fits in it)
SERVER_CPUS=${SERVER_CPUS:-8-15}
log() { echo "$(date -u +%H:%M:%S.%N | cut -c1-12) $*" | tee -a "$O/log.txt"; }
pin() { # pin CPUS CMD...: run CMD on CPUS when PIN=1
	local c=$1; shift
	if [ "$PIN" = 1 ]; then taskset -c "$c" "$@"; else "$@"; fi
}
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # utime + stime of PID, clock ticks

{ nproc; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Socket|NUMA node\(s\)'; uname -r; cat /proc/loadavg; } > "$O/host.txt" 2>&1
log "binary $B; work $WORK; shards: $SHARDS; per-shard rates: $PER_SHARD req/s; cells ${WARMUP} warm-up + ${DURATION}; gap $GAP; pin $PIN"

for N in $SHARDS; do
	D="$WORK/n$N"
	mkdir -p "$D"
	rates=$(for r in $PER_SHARD; do echo $((r * N)); done | paste -sd, -)
	# A fresh simulator; its stdin (a fifo held open on fd 9) closing stops it.
	mkfifo "$D/sim.in"
	srv=("$B" serve-sim --child --addr 127.0.0.1:0 --config "$HERE/serve-sim-fast.yaml")
	[ "$PIN" = 1 ] && srv=(taskset -c "$SERVER_CPUS" "${srv[@]}")
	"${srv[@]}" < "$D/sim.in" > "$D/sim.url" 2> "$D/sim.err" & # taskset execs: $! is the simulator
	SIM=$!
	exec 9> "$D/sim.in"
	for _ in $(seq 100); do [ -s "$D/sim.url" ] && break; sleep 0.1; done
	URL=$(head -1 "$D/sim.url")
	sed -e "s|@TRACE@|$HERE/trace-32in-16out.csv|" -e "s|@URL@|$URL|" -e "s|@RATES@|$rates|" \
		-e "s|@DURATION@|$DURATION|" -e "s|@WARMUP@|$WARMUP|" "$HERE/config.yaml.in" > "$D/config.yaml"
	start=$(date -u -d "+$LEAD seconds" +%Y-%m-%dT%H:%M:%S.%NZ)
	log "N=$N: serve-sim $URL (pid $SIM, CPUs $SERVER_CPUS), offered loads $rates req/s, start-at $start"
	t0=$(ticks $SIM); w0=$(date +%s.%N)
	while sleep 0.5; do echo "$(date +%s.%N) $(ticks $SIM)"; done > "$D/sim.samples" 2> /dev/null &
	SAMPLER=$!
	pids=()
	for ((i = 0; i < N; i++)); do
		( TIMEFORMAT='%R %U %S'
		  { time pin "$((2 * i)),$((2 * i + 1))" timeout 200 "$B" run "$D/config.yaml" --shard "$i/$N" --start-at "$start" \
			--cell-gap "$GAP" --out "$D/shard-$i" > "$D/shard-$i.log" 2>&1; echo "rc $?" >> "$D/shard-$i.log"; } 2> "$D/shard-$i.time" ) &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	w1=$(date +%s.%N); t1=$(ticks $SIM)
	kill "$SAMPLER"; wait "$SAMPLER" 2> /dev/null
	echo "$t0 $t1 $w0 $w1 $(getconf CLK_TCK)" > "$D/sim.cpu"
	for x in truth profile; do
		python3 -c "import urllib.request,sys; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1]).read())" "$URL/v1/$x" > "$D/$x.json"
	done
	exec 9>&-
	wait $SIM
	dirs=(); for ((i = 0; i < N; i++)); do dirs+=("$D/shard-$i"); done
	( TIMEFORMAT='%R %U %S'; { time "$B" merge "$D/merged" "${dirs[@]}" > "$D/merge.log" 2>&1; echo "rc $?" >> "$D/merge.log"; } 2> "$D/merge.time" )
	log "N=$N: shards $(for ((i = 0; i < N; i++)); do tail -1 "$D/shard-$i.log" | tr '\n' ' '; done)| merge $(tail -1 "$D/merge.log"), $(cut -d' ' -f1 "$D/merge.time") s"
done
python3 "$HERE/table.py" "$WORK" $SHARDS | tee "$O/table.txt"
(cd "$WORK" && tar czf "$O/small.tar.gz" --exclude=records.jsonl --exclude=results.json --exclude=truth.json --exclude=cells.jsonl --exclude=report.html --exclude=sim.in .)
cat /proc/loadavg >> "$O/host.txt"
[ "${KEEP:-0}" = 1 ] || rm -rf "$WORK"
