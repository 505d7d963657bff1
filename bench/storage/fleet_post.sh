#!/usr/bin/env bash
# A fleet posting at once (issue #39 item 4): N daemons on one PostgreSQL database, one schema
# each (storage.schema), against N daemons on a SQLite file each; runs/s and POST latency.
#
# Starts a scratch PostgreSQL server (initdb + pg_ctl in the work folder, as nobody when run as
# root, on a free port of 127.0.0.1, fsync on) with one database. Then, one configuration after
# the other, starts N real daemons (CPU backend, no benchmarks, no notifiers, a token file) on
# N SQLite files, then on the one database in schemas host_0 ... host_N-1, and has one client
# per daemon, all at once (bench/storage/fleet_post.py, a thread each), POST /api/v1/runs B
# times: each body one run of each of K keys (bench/daemon/synthetic_runs.py's records), the
# shape of a host's cycle; batch b dated now - (B - b) minutes. Each POST is a fresh connection,
# timed client-side (open, request, whole answer); every answer must be 200 with all K runs
# stored. The daemons are then stopped (SIGTERM) and `kernelwatch keys --json` must count K keys
# and B*K runs in each store. Prints one Markdown table: runs stored, load wall time (first
# POST's start to the last POST's end), runs/s, POST latency p50/p99/max over all POSTs, and
# the load average before the load.
#
#   bench/storage/fleet_post.sh [--kernelwatch PATH] [--daemons 4] [--batches 50] [--keys 20]
#                               [--work DIR (default: a new temporary folder, removed)]
#
# Needs python3 and PostgreSQL 15 or later (initdb, pg_ctl, psql; scripts/setup).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kw="$root/build/ci/daemon/kernelwatch"
daemons=4
batches=50
keys=20
work=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernelwatch) kw=$2; shift 2 ;;
    --daemons) daemons=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    -h|--help) sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fleet_post: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for n in "$daemons" "$batches" "$keys"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "fleet_post: $n is not a positive count" >&2; exit 2; }
done
[[ -x "$kw" ]] || { echo "fleet_post: no kernelwatch binary at $kw" >&2; exit 1; }
command -v python3 > /dev/null || { echo "fleet_post: python3 not found" >&2; exit 1; }
source "$root/bench/storage/pg_lib.sh"
pg_find_bin fleet_post
keep_work=1
if [[ -z "$work" ]]; then
  work=$(mktemp -d)
  keep_work=0
fi
mkdir -p "$work"
work=$(cd "$work" && pwd)
pg_prepare
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  pg_stop
  ((keep_work)) || rm -rf "$work"
}
trap cleanup EXIT
pg_start
psql -X -q -v ON_ERROR_STOP=1 "$base/postgres?$passfile" -c "CREATE DATABASE fleet"
url="$base/fleet?$passfile"

token="bench-token-$RANDOM$RANDOM$RANDOM"
printf '%s\n' "$token" > "$work/token"
chmod 600 "$work/token"

rows=()
# $1: the configuration's folder (sqlite or postgresql); $2: the table's label; $3: a function
# printing daemon I's "storage" object and $4 one printing its --db for `kernelwatch keys`.
fleet() {
  local kind=$1 label=$2 storage_of=$3 db_of=$4 i pid dport
  local dir="$work/$kind"
  rm -rf "$dir"
  mkdir -p "$dir"
  pids=()
  for ((i = 0; i < daemons; i++)); do
    cat > "$dir/kw$i.json" <<EOF
{
  "storage": $($storage_of "$i"),
  "http": {"listen": "127.0.0.1:0", "token_file": "$work/token"},
  "backend": "cpu",
  "benchmarks": [],
  "notifiers": []
}
EOF
  done
  # All N start together, as a fleet's hosts may (the schemas are created at once).
  for ((i = 0; i < daemons; i++)); do
    "$kw" daemon --config "$dir/kw$i.json" > "$dir/kw$i.out" 2> "$dir/kw$i.err" &
    pids+=($!)
  done
  local ports=() waited=0
  for ((i = 0; i < daemons; i++)); do
    pid=${pids[$i]}
    while :; do
      dport=$(sed -n 's/^kernelwatch: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$dir/kw$i.out")
      [[ -n "$dport" ]] && break
      kill -0 "$pid" 2> /dev/null ||
        { echo "fleet_post: $label: daemon $i exited at start:" >&2; tail -5 "$dir/kw$i.err" >&2; exit 1; }
      ((waited++ < 1200)) || { echo "fleet_post: $label: daemon $i did not start" >&2; exit 1; }
      sleep 0.1
    done
    ports+=("$dport")
  done
  local before out stored wall rate p50 p99 max
  before=$(cut -d' ' -f1 /proc/loadavg)
  echo "fleet_post: $label: $daemons daemons listening; posting $batches x $keys runs each (load $before)" >&2
  out=$(IFS=,; python3 "$root/bench/storage/fleet_post.py" --ports "${ports[*]}" \
    --token-file "$work/token" --batches "$batches" --keys "$keys") ||
    { echo "fleet_post: $label: the load failed (daemon logs in $dir when --work is given)" >&2; exit 1; }
  read -r stored wall rate p50 p99 max <<< "$out"
  # SIGTERM: each daemon stops cleanly, its store closed, before the CLI counts its runs.
  for ((i = 0; i < daemons; i++)); do kill -TERM "${pids[$i]}"; done
  for ((i = 0; i < daemons; i++)); do
    if ! wait "${pids[$i]}"; then
      echo "fleet_post: $label: daemon $i did not exit cleanly on SIGTERM:" >&2
      tail -5 "$dir/kw$i.err" >&2
      exit 1
    fi
  done
  pids=()
  for ((i = 0; i < daemons; i++)); do
    "$kw" keys --db "$($db_of "$i")" --json > "$dir/keys$i.json" 2> "$dir/keys$i.err" ||
      { echo "fleet_post: $label: kernelwatch keys failed for daemon $i:" >&2; tail -5 "$dir/keys$i.err" >&2; exit 1; }
    python3 - "$dir/keys$i.json" "$keys" "$((batches * keys))" "$label, daemon $i" <<'EOF'
import json, sys
path, keys, runs, who = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
found = json.load(open(path))
stored = sum(k["runs"] for k in found)
if len(found) != keys or stored != runs:
    sys.exit(f"fleet_post: {who}: the store holds {stored} runs in {len(found)} keys, "
             f"expected {runs} in {keys}")
EOF
  done
  rows+=("| $label | $stored | $wall | $rate | $p50 | $p99 | $max | $before |")
  echo "fleet_post: $label: $stored runs in $wall s, $rate runs/s, POST p50 $p50 ms, p99 $p99 ms, max $max ms" >&2
}

sqlite_storage() { echo "{\"path\": \"$work/sqlite/kw$1.db\"}"; }
sqlite_db() { echo "$work/sqlite/kw$1.db"; }
postgres_storage() { echo "{\"postgresql\": \"$url\", \"schema\": \"host_$1\"}"; }
postgres_db() { echo "$url&options=-csearch_path%3Dhost_$1"; }

fleet sqlite "SQLite, $daemons daemons, $daemons files" sqlite_storage sqlite_db
fleet postgresql "PostgreSQL, $daemons daemons, one database, $daemons schemas" \
  postgres_storage postgres_db

echo "| configuration | runs stored | load wall s | runs/s | POST p50 ms | POST p99 ms | POST max ms | load before |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
printf '%s\n' "${rows[@]}"
