#!/bin/sh
# H200 evidence for server.kind command and server.kind endpoint (run on the H200 on 2026-12-01: results/h200-2026-12-01/command/ and endpoint/).
# Run from the repository root on the device machine, with $OUT the folder to bring back:
#   sh configs/h200-evidence.sh "$OUT"
# It uses bin/transferlab when present (built beforehand with
# `CGO_ENABLED=1 go build -tags nvml -o bin/transferlab ./cmd/transferlab` and carried),
# else builds it there.
# Expected device time: ~5-6 min (three server starts of ~60-90 s, three 20 s cells).
set -eu
out=${1:?usage: h200-evidence.sh OUT}
mkdir -p "$out"
[ -x bin/transferlab ] || CGO_ENABLED=1 go build -tags nvml -o bin/transferlab ./cmd/transferlab
git rev-parse HEAD >"$out/commit.txt" 2>&1 || echo "not a git checkout" >"$out/commit.txt"
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv >"$out/gpu.txt" 2>&1 || true

# 1. The reference server started by hand, measured as an endpoint.
PYTHONPATH=integrate/python/shim${PYTHONPATH:+:$PYTHONPATH} python3 integrate/python/refserver.py --config configs/refserver-llama3-8b.json \
	--host 127.0.0.1 --port 8765 >"$out/hand-started-server.log" 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null || true' EXIT
i=0
until python3 -c 'import urllib.request as u; u.urlopen("http://127.0.0.1:8765/health", timeout=2)' 2>/dev/null; do
	i=$((i + 1))
	if [ $i -gt 900 ] || ! kill -0 $srv 2>/dev/null; then
		echo "hand-started server not ready; its log:" >&2
		tail -50 "$out/hand-started-server.log" >&2
		exit 1
	fi
	sleep 1
done
bin/transferlab run configs/h200-endpoint-reference.yaml --out "$out/endpoint" 2>&1 | tee "$out/endpoint.log"
kill $srv
wait $srv 2>/dev/null || true
trap - EXIT

# 2. The same server launched through server.kind command, hook on the candidate arm.
bin/transferlab run configs/h200-command-hook.yaml --out "$out/command" 2>&1 | tee "$out/command.log"
