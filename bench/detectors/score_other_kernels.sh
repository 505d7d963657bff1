#!/usr/bin/env bash
# Scores detection on history it was never tuned on: imports Liger's weekly CI of 18 other
# kernels (data/liger/other_kernels, 25,200 runs), runs `kernelwatch backtest --json` over it and
# scores the alerts with the data's own scorer (false alarms per 1,000 reference runs, share of
# code-change steps found within two runs). Times the backtest --repeat times (default 5) and
# prints each run's wall time and peak RSS, then the median wall time and the largest RSS.
# Usage: bench/detectors/score_other_kernels.sh [--build DIR] [--confirm next|none] [--repeat N]
#        [--details FILE]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build="$root/build/ci"
confirm=next
repeat=5
details=()
while (($#)); do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --confirm) confirm=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --details) details=(--details "$2"); shift 2 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "score_other_kernels: unknown argument $1" >&2; exit 2 ;;
  esac
done
kw="$build/daemon/kernelwatch"
data="$root/data/liger/other_kernels"
[[ -x $kw ]] || { echo "score_other_kernels: no $kw (build first)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
imported=$("$kw" import --db "$work/kw.db" "$data/weekly_ci.dev_kernels.csv.gz")
echo "$imported" >&2
runs=$(sed -n 's/.* new \([0-9]*\),.*/\1/p' <<< "$imported")
[[ -n $runs ]] || { echo "score_other_kernels: no run count in the import's answer" >&2; exit 1; }
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "score_other_kernels: --repeat needs a positive count" >&2; exit 2; }
for ((i = 1; i <= repeat; i++)); do
  /usr/bin/time -f "%e %M" -o "$work/time.$i" \
    "$kw" backtest --db "$work/kw.db" --confirm "$confirm" --json > "$work/alerts.json"
  read -r wall rss < "$work/time.$i"
  echo "backtest $i: $wall s wall, $rss KiB peak RSS" >&2
done
cat "$work"/time.* | sort -n | awk '{ w[NR] = $1; if ($2 > m) m = $2 }
  END { printf "backtest of %d runs: median %.2f s wall over %d, largest peak RSS %.1f MiB\n",
        '"$runs"', w[int((NR + 1) / 2)], NR, m / 1024 }' >&2
python3 "$data/score.py" "$work/alerts.json" "$data/weekly_ci.dev_kernels.csv.gz" \
  "$data/labels.dev.json" "${details[@]}"
