#!/usr/bin/env bash
# Runs the digits example job end to end, from any folder:
#   1. creates .venv (python3 -m venv) if missing and installs prsd with its examples extra,
#   2. writes the data (examples/digits/prepare.py),
#   3. runs the job with `prsd run examples/digits` (local spool ./spool, or $PRSD_SPOOL),
#   4. checks the job's output (examples/digits/check.py).
# Needs Python 3.11+ as python3 (or $PYTHON) with venv support (Debian: python3-venv).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

now_ms() { date +%s%3N; }
seconds_since() { local ms=$(($(now_ms) - $1)); printf '%d.%03ds' $((ms / 1000)) $((ms % 1000)); }
step() { printf '\n== %s\n' "$*"; }

t_start=$(now_ms)
PYTHON=${PYTHON:-python3}

# 1. The virtual environment. Reinstalled when pyproject.toml is newer than the last install.
step "setup: .venv"
t=$(now_ms)
if [[ ! -x .venv/bin/python ]]; then
    if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "example: prsd needs Python 3.11 or later as '$PYTHON' (set PYTHON=...)" >&2
        exit 1
    fi
    if ! "$PYTHON" -m venv .venv; then
        rm -rf .venv
        echo "example: '$PYTHON -m venv' failed; on Debian/Ubuntu: apt-get install python3-venv" >&2
        exit 1
    fi
fi
stamp=.venv/.prsd-examples-installed
if [[ ! -f $stamp || pyproject.toml -nt $stamp || ! -x .venv/bin/prsd ]]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[examples]'
    touch "$stamp"
else
    echo "prsd and the examples extra already installed"
fi
t_setup=$(seconds_since "$t")

# 2. The data: 899 PNG images to score, the training split, the labels.
step "prepare: examples/digits/prepare.py"
t=$(now_ms)
.venv/bin/python examples/digits/prepare.py
t_prepare=$(seconds_since "$t")

# 3. The job. prsd prints `job <id>` first and `output <path>` when the file is written.
step "run: prsd run examples/digits"
t=$(now_ms)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
PYTHONUNBUFFERED=1 .venv/bin/prsd run examples/digits | tee "$log" || rc=$?
t_run=$(seconds_since "$t")
if ((rc != 0)); then
    job=$(sed -n 's/^job //p' "$log" | head -n 1)
    echo "example: prsd run exited $rc${job:+; see ${PRSD_SPOOL:-spool}/jobs/$job/logs/job_result.txt}" >&2
    exit "$rc"
fi

# 4. The check: one line per image, in input order, accuracy >= 0.9.
step "check: examples/digits/check.py"
t=$(now_ms)
output=$(sed -n 's/^output //p' "$log" | tail -n 1)
if [[ -n $output ]]; then
    .venv/bin/python examples/digits/check.py "$output"
else
    .venv/bin/python examples/digits/check.py # the newest predictions.txt in the spool
fi
t_check=$(seconds_since "$t")

printf '\nexample: done in %s (setup %s, prepare %s, prsd run %s, check %s)\n' \
    "$(seconds_since "$t_start")" "$t_setup" "$t_prepare" "$t_run" "$t_check"
