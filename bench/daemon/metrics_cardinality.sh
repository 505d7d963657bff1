#!/usr/bin/env bash
# /metrics at thousands of keys, for each metrics.per_key setting (issue #26).
#
# Imports a synthetic history through the real binary (KEYS keys of RUNS runs, 1% noise; 2% of
# the keys step 30% slower for their last two runs, which imported history turns into firing
# alerts, and 1% end with a failed run), starts the daemon (no benchmarks, no notifiers), and for
# each setting (switched with SIGHUP, as an operator would) measures the /metrics body: bytes,
# samples, per-key samples, and the scrape time of a freshly rendered answer (curl, after the
# 1 s the daemon keeps a rendered answer, as a 15 s scrape interval always finds it), median
# and max of SCRAPES; then runs `promtool check metrics` on it. Prints one table; everything
# stays in a temporary directory that is removed at the end. Loopback only.
#
#   bench/daemon/metrics_cardinality.sh [--kernelwatch PATH] [--keys 5000] [--runs 8]
#                                       [--scrapes 10] [--settings "all problems none"]
#
# --settings default leaves the metrics section out of the config (a binary from before it).
# Needs curl, python3 and promtool (scripts/setup installs prometheus).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/bench/daemon/daemon_lib.sh"
kw="$root/build/ci/daemon/kernelwatch"
keys=5000
runs=8
scrapes=10
settings="all problems none"

usage() { sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernelwatch) kw=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --scrapes) scrapes=$2; shift 2 ;;
    --settings) settings=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "metrics_cardinality: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
kw_require metrics_cardinality curl python3 promtool
kw_make_work

python3 "$root/bench/daemon/synthetic_runs.py" "$work/runs.jsonl" --keys "$keys" --runs "$runs" \
  --stepped 0.02 --failing 0.01
start=$(date +%s.%N)
"$kw" import --db "$work/kw.db" "$work/runs.jsonl" >/dev/null
import_s=$(python3 -c "print(f'{$(date +%s.%N) - $start:.1f}')")

write_config() {
  local metrics=""
  [[ "$1" != default ]] && metrics="\"metrics\": {\"per_key\": \"$1\"},"
  kw_write_config "$work/kw.db" "$metrics"
}

first=${settings%% *}
write_config "$first"
kw_start_daemon metrics_cardinality
url="http://127.0.0.1:$kw_port/metrics"

echo "# /metrics with $keys keys ($((keys * runs)) runs imported in ${import_s} s); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# kernelwatch $("$kw" --version 2>/dev/null || echo) ; scrape time: curl time_total of a freshly rendered answer, median/max of $scrapes"
printf '%-9s %12s %9s %15s %12s %12s %9s\n' per_key bytes samples "per-key samples" "scrape p50" "scrape max" promtool
for setting in $settings; do
  if [[ "$setting" != "$first" ]]; then
    write_config "$setting"
    before=$(grep -c "config reloaded" "$work/kw.err" || true)
    kill -HUP "$kw_pid"
    for _ in $(seq 1 600); do
      [[ $(grep -c "config reloaded" "$work/kw.err" || true) -gt $before ]] && break
      sleep 0.1
    done
  fi
  times=()
  for _ in $(seq 1 "$scrapes"); do
    sleep 1.1  # past the 1 s a rendered answer is kept: this scrape renders
    times+=("$(curl -sf -o "$work/metrics.txt" -w '%{time_total}' "$url")")
  done
  bytes=$(stat -c %s "$work/metrics.txt")
  samples=$(grep -vc '^#' "$work/metrics.txt" || true)
  per_key=$(grep -c '^kernelwatch_key_[a-z_]*{' "$work/metrics.txt" || true)
  stats=$(printf '%s\n' "${times[@]}" | python3 -c '
import statistics, sys
t = sorted(float(x) * 1000 for x in sys.stdin.read().split())
print(f"{statistics.median(t):.1f}ms {t[-1]:.1f}ms")')
  if promtool check metrics < "$work/metrics.txt" > "$work/promtool.txt" 2>&1; then
    check=pass
  else
    check=FAIL
    cat "$work/promtool.txt" >&2
  fi
  printf '%-9s %12s %9s %15s %12s %12s %9s\n' "$setting" "$bytes" "$samples" "$per_key" $stats "$check"
done
