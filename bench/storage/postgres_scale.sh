#!/usr/bin/env bash
# SQLite against PostgreSQL, side by side on one machine (issue #39): a synthetic history of RUNS
# runs over KEYS keys (bench/storage/make_history.py, as Liger CSV), imported into a fresh SQLite
# file and into a fresh database on a scratch PostgreSQL server (initdb + pg_ctl in the work
# folder, as nobody when run as root, on a free port of 127.0.0.1, fsync on), then the same
# import again (every run a duplicate), `backtest --json` and `history --json --limit 0` from
# each; each timed by /usr/bin/time (wall, peak RSS) with the load average before it. Prints one
# Markdown table. --no-history leaves out the two `history` steps (at 1,000,000 runs the
# PostgreSQL one alone takes about 9 minutes on a 2-core machine).
#
#   bench/storage/postgres_scale.sh [--kernelwatch PATH] [--runs "100000"] [--keys 5000]
#                                   [--no-history]
#                                   [--work DIR (default: a new temporary folder, removed)]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kw="$root/build/ci/daemon/kernelwatch"
sizes="100000"
keys=5000
work=""
history=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernelwatch) kw=$2; shift 2 ;;
    --runs) sizes=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --no-history) history=0; shift ;;
    -h|--help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "postgres_scale: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$kw" ]] || { echo "postgres_scale: no kernelwatch binary at $kw" >&2; exit 1; }
source "$root/bench/storage/pg_lib.sh"
pg_find_bin postgres_scale
keep_work=1
if [[ -z "$work" ]]; then
  work=$(mktemp -d)
  keep_work=0
fi
mkdir -p "$work"
pg_prepare
cleanup() {
  pg_stop
  ((keep_work)) || rm -rf "$work"
}
trap cleanup EXIT
pg_start

rows=()
load() { cut -d' ' -f1 /proc/loadavg; }
timed() {
  local label=$1 n=$2
  shift 2
  local before
  before=$(load)
  if ! /usr/bin/time -f '%e %M' -o "$work/time" "$@" > "$work/out" 2> "$work/err"; then
    echo "postgres_scale: $label failed:" >&2
    tail -5 "$work/err" >&2
    exit 1
  fi
  local wall rss rate
  read -r wall rss < <(tail -1 "$work/time")
  rate=$(python3 -c "print(f'{$n / max($wall, 0.001):,.0f}')")
  rows+=("| $n | $label | $wall | $rate | $(python3 -c "print(f'{$rss / 1024:.0f}')") | $before |")
  echo "postgres_scale: $n $label: $wall s, $rate runs/s, peak RSS $((rss / 1024)) MiB (load $before)" >&2
}

for n in $sizes; do
  data="$work/h$n"
  [[ -f "$data.csv" ]] || python3 "$root/bench/storage/make_history.py" --runs "$n" --keys "$keys" --out "$data" >&2
  psql -X -q -v ON_ERROR_STOP=1 "$base/postgres?$passfile" -c "CREATE DATABASE kw$n"
  url="$base/kw$n?$passfile"
  rm -f "$work/kw$n.db"*
  timed "import (CSV), SQLite" "$n" "$kw" import --db "$work/kw$n.db" "$data.csv"
  timed "import (CSV), PostgreSQL" "$n" "$kw" import --db "$url" "$data.csv"
  timed "import again (all duplicates), SQLite" "$n" "$kw" import --db "$work/kw$n.db" "$data.csv"
  timed "import again (all duplicates), PostgreSQL" "$n" "$kw" import --db "$url" "$data.csv"
  timed "backtest --json, SQLite" "$n" "$kw" backtest --db "$work/kw$n.db" --json
  cp "$work/out" "$work/backtest-sqlite.json"
  timed "backtest --json, PostgreSQL" "$n" "$kw" backtest --db "$url" --json
  cmp -s "$work/out" "$work/backtest-sqlite.json" ||
    { echo "postgres_scale: the two backtests differ" >&2; exit 1; }
  if ((history)); then
    timed "history --json --limit 0, SQLite" "$n" "$kw" history --db "$work/kw$n.db" --json --limit 0
    timed "history --json --limit 0, PostgreSQL" "$n" "$kw" history --db "$url" --json --limit 0
  fi
done

echo "| runs | step | wall s | runs/s | peak RSS MiB | load before |"
echo "| --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
