#!/usr/bin/env bash
# Resident memory of the daemon right after a restart over a long history (issue #15: 817 MB for
# 32k runs of one key, 16.7 MB after malloc_trim). Generates RUNS runs of one key (1% noise, a
# 30% step every STEP runs so the replay fires and resolves alerts), imports them, starts the
# daemon (no benchmarks, no notifiers) and prints VmRSS and VmHWM once it listens.
#
#   bench/daemon/restart_rss.sh [--kernelwatch PATH] [--runs 32000] [--step-every 2000]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/bench/daemon/daemon_lib.sh"
kw="$root/build/ci/daemon/kernelwatch"
runs=32000
step_every=2000
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernelwatch) kw=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --step-every) step_every=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "restart_rss: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
kw_require restart_rss python3
kw_make_work

KW_BENCH_DIR="$(dirname "$0")" python3 - "$work/history.jsonl" "$runs" "$step_every" <<'EOF'
import datetime, json, math, os, sys
sys.path.insert(0, os.environ["KW_BENCH_DIR"])
from kernelindex_record import record
path, runs, step_every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
start = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0) - datetime.timedelta(minutes=runs + 60)
with open(path, "w") as f:
    for i in range(runs):
        at = start + datetime.timedelta(minutes=i)
        level = 1_300_000 if (i // step_every) % 2 else 1_000_000
        median = level + int(10_000 * math.sin(i * 1.7))
        f.write(json.dumps(record(at, median, f"rss-{i}", f"rss/{i}", "rss-bench", "bench",
                                  "one-key")) + "\n")
EOF
"$kw" import --db "$work/kw.db" "$work/history.jsonl"
kw_write_config "$work/kw.db"
started=$(date +%s.%N)
kw_start_daemon restart_rss 3000
ready=$(date +%s.%N)
echo "runs $runs; start (replay) took $(python3 -c "print(f'{$ready - $started:.1f}')") s"
grep -E 'VmRSS|VmHWM' "/proc/$kw_pid/status"
