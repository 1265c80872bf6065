#!/usr/bin/env bash
# The big-machine run of issue 32, in one call (from the repository root):
#   bench/bigmachine.sh            W9 for N = 1,2,4,8,16,32 agents (max_concurrency_per_instance
#                                  set explicitly: 2 slots per agent, bench/fleet.py), W1-W4 with
#                                  8 and 16 workers, and a GPU job's NVML utilisation against the
#                                  same model in a tight loop on the same GPU (skipped, with one
#                                  line, where there is no GPU or no torch).
#   bench/bigmachine.sh --quick    the same steps at a tiny size on 2 workers (any machine; W9
#                                  through prsd alone).
# Tables go to bench/results/ (or $BENCH_RESULTS); the GPU figures to gpu-<stamp>.json there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
RESULTS=${BENCH_RESULTS:-bench/results}
mkdir -p "$RESULTS"
if [[ "${1:-}" == "--quick" ]]; then
    SUITE=tiny; WORKERS="2"; AGENTS="1,2"; REPEATS=1; GPU_ARGS=(--seconds 3 --items 20)
    RUNNERS=prsd-run,sequential,pool
else
    SUITE=full; WORKERS="8 16"; AGENTS="1,2,4,8,16,32"; REPEATS=3; GPU_ARGS=(--seconds 30)
    RUNNERS=${BENCH_RUNNERS:-prsd-run,prsd-daemons,sequential,pool,dask,ray}
fi
echo "big-machine run: suite $SUITE, $(nproc) CPUs, $(date -u +%FT%TZ)"
"$PY" -m bench --suite "$SUITE" --workloads W9 --w9-agents "$AGENTS" --results "$RESULTS"
for w in $WORKERS; do
    echo "W1-W4 with $w workers"
    "$PY" -m bench --suite "$SUITE" --workloads W1,W2,W3,W4 --workers "$w" \
        --runners "$RUNNERS" --repeats "$REPEATS" --results "$RESULTS"
done
"$PY" -m bench.gpu "${GPU_ARGS[@]}" --out "$RESULTS/gpu-$(date -u +%Y%m%dT%H%M%SZ).json"
echo "big-machine run: done"
