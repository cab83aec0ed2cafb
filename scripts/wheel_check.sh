#!/usr/bin/env bash
# The wheel is complete: installed into a fresh venv and run from an empty folder, stopbench
# finds its tasks, profiles and fake server and scores the reference agent on one task.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d -t stopbench-wheel-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$here"
mkdir "$work/empty"
cd "$work/empty"
"$work/venv/bin/stopbench" run --agent reference --adapter http --task exit-codes --report-dir "$work/reports"
test -s "$work/reports/results.json"
echo "wheel check: installed stopbench ran the exit-codes task from an empty folder"
