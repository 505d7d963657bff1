#!/usr/bin/env bash
# POST /api/v1/runs of runs of keys the daemon has never seen, beside many keys it has.
#
# Imports KEYS keys of one run each through the real binary, starts the daemon (no benchmarks,
# no notifiers, a token file), then POSTs BATCHES bodies of BATCH runs each, every run the first
# of a new key (the same synthetic records: workloads bench-KEYS ...), and prints each POST's
# wall time (curl time_total). A new key is checked against the keys it may replace (a changed
# protocol); before that lookup was indexed, each new key sorted every key: 400 new keys beside
# 20,000 took 16-23 s per POST. Everything stays in a temporary directory removed at the end.
#
#   bench/daemon/new_keys_post.sh [--kernelwatch PATH] [--keys 20000] [--batch 400] [--batches 3]
#
# Needs curl and python3.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/bench/daemon/daemon_lib.sh"
kw="$root/build/ci/daemon/kernelwatch"
keys=20000
batch=400
batches=3

usage() { sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernelwatch) kw=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --batch) batch=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "new_keys_post: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
kw_require new_keys_post curl python3
kw_make_work

total=$((keys + batch * batches))
python3 "$root/bench/daemon/synthetic_runs.py" "$work/all.jsonl" --keys "$total" --runs 1
head -n "$keys" "$work/all.jsonl" > "$work/known.jsonl"
"$kw" import --db "$work/kw.db" "$work/known.jsonl" >/dev/null
python3 - "$work" "$keys" "$batch" "$batches" <<'EOF'
import json, sys
work, keys, batch, batches = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
lines = open(f"{work}/all.jsonl").read().splitlines()[keys:]
for b in range(batches):
    with open(f"{work}/batch{b}.json", "w") as f:
        json.dump([json.loads(line) for line in lines[b * batch:(b + 1) * batch]], f)
EOF
kw_new_token
kw_write_config "$work/kw.db"
kw_start_daemon new_keys_post

echo "# $batches POSTs of $batch runs of new keys beside $keys keys; load average $(cut -d' ' -f1-3 /proc/loadavg)"
for b in $(seq 0 $((batches - 1))); do
  out=$(curl -s -o "$work/answer.json" -w '%{http_code} %{time_total}' \
    -H "Authorization: Bearer $token" -H "Content-Type: application/json" \
    --data-binary @"$work/batch$b.json" "http://127.0.0.1:$kw_port/api/v1/runs")
  [[ "${out%% *}" == 200 ]] || { echo "new_keys_post: POST answered ${out%% *}" >&2; cat "$work/answer.json" >&2; exit 1; }
  echo "POST $((b + 1)): ${out#* } s"
done
