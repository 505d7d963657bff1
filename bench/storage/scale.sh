#!/usr/bin/env bash
# Years of history on one host (issue #26): for each size, a synthetic history over KEYS keys
# (bench/storage/make_history.py: steps, noise, failed runs) as Liger CSV and as kernelindex JSON
# Lines, then, each timed by /usr/bin/time (wall, peak RSS) with the load average before it:
#   import of the CSV into a fresh database, sqlite3's own .import of the same CSV (the yardstick),
#   the same import again (every run a duplicate), import of the JSON Lines into another database,
#   history --json --limit 0, backtest --json, daemon start until /readyz answers 200, and the
#   database's bytes per run. Prints one Markdown table.
#
#   bench/storage/scale.sh [--kernelwatch PATH] [--runs "100000 1000000"] [--keys 5000]
#                          [--work DIR (default: a new temporary folder, removed at the end)]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kw="$root/build/ci/daemon/kernelwatch"
sizes="100000 1000000"
keys=5000
work=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernelwatch) kw=$2; shift 2 ;;
    --runs) sizes=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scale: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$kw" ]] || { echo "scale: no kernelwatch binary at $kw (--kernelwatch PATH)" >&2; exit 1; }
for tool in /usr/bin/time sqlite3 curl python3; do
  command -v "$tool" >/dev/null || { echo "scale: $tool is needed" >&2; exit 1; }
done
keep_work=1
if [[ -z "$work" ]]; then
  work=$(mktemp -d)
  keep_work=0
fi
mkdir -p "$work"
kw_pid=""
cleanup() {
  [[ -n "$kw_pid" ]] && kill "$kw_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  ((keep_work)) || rm -rf "$work"
}
trap cleanup EXIT

rows=()
load() { cut -d' ' -f1 /proc/loadavg; }

# timed LABEL RUNS COMMAND...: runs it under /usr/bin/time, output to $work/out, and adds a row.
timed() {
  local label=$1 n=$2
  shift 2
  local before
  before=$(load)
  if ! /usr/bin/time -f '%e %M' -o "$work/time" "$@" > "$work/out" 2> "$work/err"; then
    echo "scale: $label failed:" >&2
    tail -5 "$work/err" >&2
    exit 1
  fi
  local wall rss
  read -r wall rss < <(tail -1 "$work/time")
  local rate
  rate=$(python3 -c "print(f'{$n / max($wall, 0.001):,.0f}')")
  rows+=("| $n | $label | $wall | $rate | $(python3 -c "print(f'{$rss / 1024:.0f}')") | $before |")
  echo "scale: $n $label: $wall s, $rate rows/s, peak RSS $((rss / 1024)) MiB (load $before)" >&2
}

for n in $sizes; do
  data="$work/h$n"
  if [[ ! -f "$data.csv" ]]; then
    python3 "$root/bench/storage/make_history.py" --runs "$n" --keys "$keys" --out "$data" >&2
  fi
  rm -f "$work/kw$n.db"* "$work/jl$n.db"* "$work/sqlite$n.db"
  timed "import (CSV)" "$n" "$kw" import --db "$work/kw$n.db" "$data.csv"
  timed "sqlite3 .import of the same CSV" "$n" \
    sqlite3 "$work/sqlite$n.db" -cmd ".mode csv" ".import '$data.csv' runs"
  timed "import again (all duplicates)" "$n" "$kw" import --db "$work/kw$n.db" "$data.csv"
  timed "import (kernelindex JSON Lines)" "$n" "$kw" import --db "$work/jl$n.db" "$data.jsonl"
  timed "history --json --limit 0" "$n" "$kw" history --db "$work/kw$n.db" --json --limit 0
  timed "backtest --json" "$n" "$kw" backtest --db "$work/kw$n.db" --json
  rm -f "$work/sqlite$n.db"

  # Daemon start until /readyz answers 200 (no benchmarks, no notifiers: the replay of the
  # history is the start).
  cat > "$work/kernelwatch.json" <<EOF
{"storage": {"path": "$work/kw$n.db"}, "http": {"listen": "127.0.0.1:0"}, "backend": "cpu",
 "benchmarks": [], "notifiers": []}
EOF
  before=$(load)
  started=$(date +%s.%N)
  "$kw" daemon --config "$work/kernelwatch.json" > "$work/kw.out" 2> "$work/kw.err" &
  kw_pid=$!
  port=""
  ready=""
  for _ in $(seq 1 6000); do
    kill -0 "$kw_pid" 2>/dev/null || { cat "$work/kw.err" >&2; exit 1; }
    if [[ -z "$port" ]]; then
      port=$(sed -n 's/^kernelwatch: listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/kw.out")
    fi
    if [[ -n "$port" ]] &&
      [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz") == 200 ]]; then
      ready=$(date +%s.%N)
      break
    fi
    sleep 0.05
  done
  [[ -n "$ready" ]] || { echo "scale: the daemon never became ready" >&2; exit 1; }
  hwm=$(sed -n 's/^VmHWM:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$kw_pid/status")
  kill -TERM "$kw_pid"
  wait "$kw_pid" || true
  kw_pid=""
  wall=$(python3 -c "print(f'{$ready - $started:.2f}')")
  rows+=("| $n | daemon start to /readyz 200 | $wall | - | $((hwm / 1024)) | $before |")
  echo "scale: $n daemon to /readyz: $wall s, VmHWM $((hwm / 1024)) MiB (load $before)" >&2

  bytes=$(stat -c %s "$work/kw$n.db")
  rows+=("| $n | database (CSV import): $((bytes / 1024 / 1024)) MiB | - | $((bytes / n)) bytes/run | - | - |")
  bytes=$(stat -c %s "$work/jl$n.db")
  rows+=("| $n | database (JSON Lines import): $((bytes / 1024 / 1024)) MiB | - | $((bytes / n)) bytes/run | - | - |")
  rm -f "$work/jl$n.db"*
done

echo
echo "kernelwatch: $kw; $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
echo
echo "| runs | what | wall (s) | rows/s | peak RSS (MiB) | load average before |"
echo "| ---: | --- | ---: | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
