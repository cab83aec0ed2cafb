#!/usr/bin/env bash
# Every way of installing stopbench is complete: the wheel and the sdist built from this
# folder, and `pip install git+file://…` of a clean copy of it (what a CI job or pipx does with
# a git URL). Each is installed in turn into one fresh venv and run from an empty folder:
# stopbench must report its version and find its tasks, profiles and fake server, and score
# the reference agent on one task.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
work=$(mktemp -d -t stopbench-wheel-XXXXXX)
trap 'rm -rf "$work"' EXIT
pip=("$work/venv/bin/pip" -q --disable-pip-version-check)

# The committed and the new files of this folder, as a repository of their own: a git URL
# installs what a clone holds, never what is only in this working folder's ignored files.
mkdir "$work/repo"
(cd "$here" && git ls-files -z --cached --others --exclude-standard) \
  | (cd "$here" && xargs -0 tar -cf - --ignore-failed-read 2>/dev/null) | tar -xf - -C "$work/repo"
git -C "$work/repo" init -q
git -C "$work/repo" add -A
git -C "$work/repo" -c user.name=check -c user.email=check@localhost commit -q -m "snapshot"

"$python" -m venv "$work/venv"
"${pip[@]}" install build
"$work/venv/bin/python" -m build -q --outdir "$work/dist" "$work/repo" >/dev/null
mkdir "$work/empty"
shipped="$(find "$here/harness/tasks" -name task.toml | wc -l) tasks, $(find "$here/harness/agents/profiles" -name '*.toml' | wc -l) agents"

check() {  # $1: what was installed
  local version found
  version=$(cd "$work/empty" && "$work/venv/bin/stopbench" --version)
  [[ $version == "stopbench "[0-9]* ]] || { echo "$1: stopbench --version said: $version" >&2; exit 1; }
  found=$(cd "$work/empty" && "$work/venv/bin/stopbench" list --json | "$work/venv/bin/python" -c \
    'import json, sys; d = json.load(sys.stdin); print(len(d["tasks"]), "tasks,", len(d["agents"]), "agents")')
  [[ $found == "$shipped" ]] || { echo "$1: installed stopbench lists $found; the source has $shipped" >&2; exit 1; }
  rm -rf "$work/reports"
  (cd "$work/empty" && "$work/venv/bin/stopbench" run --agent reference --adapter http --task exit-codes \
     --report-dir "$work/reports" >/dev/null)
  test -s "$work/reports/results.json"
  echo "$1: $version lists $found and ran the exit-codes task from an empty folder"
}

"${pip[@]}" install "$work"/dist/*.whl
check "wheel"
"${pip[@]}" install --force-reinstall --no-deps "$work"/dist/*.tar.gz
check "sdist"
"${pip[@]}" install --force-reinstall --no-deps "git+file://$work/repo"
check "git URL"
