#!/usr/bin/env bash
# kernelwatch's HTTP server side by side with nginx serving the same bytes (issue #15).
#
# Starts kernelwatch (no benchmarks, no notifiers) on a database with the repository's data
# imported, saves the bytes of /api/v1/status and /metrics, starts nginx on loopback (its own
# temporary prefix, no root) serving those bytes as static files, and runs wrk against both
# (1, 4 and 64 connections by default). Then measures /healthz latency with wrk while a loop of
# 450-run batches is POSTed to /api/v1/runs. Prints two tables; everything stays in a temporary
# directory that is removed at the end. Loopback only.
#
#   bench/daemon/wrk_vs_nginx.sh [--kernelwatch PATH] [--duration SECONDS]
#                                [--connections "1 4 64"] [--posts SECONDS]
#
# Needs wrk, nginx, curl and python3 (scripts/setup --bench installs wrk and nginx). On a
# machine with few cores wrk, nginx and kernelwatch share them: the ratio is what compares.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/bench/daemon/daemon_lib.sh"
kw="$root/build/ci/daemon/kernelwatch"
duration=20
connections="1 4 64"
post_seconds=15

usage() { sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernelwatch) kw=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --posts) post_seconds=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "wrk_vs_nginx: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for tool in wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "wrk_vs_nginx: $tool not found (scripts/setup --bench)" >&2; exit 1; }
done
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x "$nginx" ]] || { echo "wrk_vs_nginx: nginx not found (scripts/setup --bench)" >&2; exit 1; }
[[ -x "$kw" ]] || { echo "wrk_vs_nginx: no kernelwatch binary at $kw (--kernelwatch PATH)" >&2; exit 1; }

work=$(mktemp -d)
kw_pid=""
nginx_pid=""
poster_pid=""
cleanup() {
  for pid in $poster_pid $nginx_pid $kw_pid; do
    kill "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- kernelwatch with the repository's data ---------------------------------------------------
db="$work/kw.db"
"$kw" import --db "$db" "$root"/data/kernelindex/*.json "$root"/data/liger/*.csv >/dev/null
kw_new_token
kw_write_config "$db"
kw_start_daemon wrk_vs_nginx 600

# --- nginx serving the same bytes -------------------------------------------------------------
mkdir -p "$work/nginx/html/api/v1" "$work/nginx/logs"
# Started as root, nginx's worker runs as nobody: it must be able to reach and read the files.
chmod 711 "$work"
chmod -R a+rX "$work/nginx"
curl -sf "http://127.0.0.1:$kw_port/api/v1/status" -o "$work/nginx/html/api/v1/status"
curl -sf "http://127.0.0.1:$kw_port/metrics" -o "$work/nginx/html/metrics"
chmod a+r "$work/nginx/html/metrics" "$work/nginx/html/api/v1/status"
nginx_port=$(free_port)
cat > "$work/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $work/nginx/tmp_body;
  proxy_temp_path $work/nginx/tmp_proxy;
  fastcgi_temp_path $work/nginx/tmp_fastcgi;
  uwsgi_temp_path $work/nginx/tmp_uwsgi;
  scgi_temp_path $work/nginx/tmp_scgi;
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$nginx_port;
    root $work/nginx/html;
    location = /api/v1/status { default_type application/json; }
    location = /metrics { default_type "text/plain; version=0.0.4; charset=utf-8"; }
  }
}
EOF
"$nginx" -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$nginx_port/metrics" -o /dev/null && break
  sleep 0.1
done
cmp -s <(curl -sf "http://127.0.0.1:$nginx_port/api/v1/status") "$work/nginx/html/api/v1/status" ||
  { echo "wrk_vs_nginx: nginx does not serve the saved bytes" >&2; exit 1; }

# Requests/s of one wrk run.
rate() {
  wrk -t1 -c"$2" -d"${duration}s" "$1" | awk '/^Requests\/sec:/ {print $2}'
}

echo "# wrk -t1 -cN -d${duration}s, loopback; kernelwatch $("$kw" --version 2>/dev/null || echo)"
printf '%-16s %6s %10s %12s %12s %7s\n' endpoint conns bytes kernelwatch nginx ratio
for path in /api/v1/status /metrics; do
  bytes=$(stat -c %s "$work/nginx/html$path")
  for c in $connections; do
    k=$(rate "http://127.0.0.1:$kw_port$path" "$c")
    n=$(rate "http://127.0.0.1:$nginx_port$path" "$c")
    ratio=$(python3 -c "print(f'{float(\"$k\") / float(\"$n\"):.2f}')")
    printf '%-16s %6s %10s %12s %12s %7s\n' "$path" "$c" "$bytes" "$k" "$n" "${ratio}x"
  done
done

# --- /healthz while 450-run batches are posted ----------------------------------------------
# Batches of 450 new runs (45 keys x 10 runs, dated before now), one file per POST: enough
# files for 12 POSTs a second, so that the loop is still posting when wrk stops (checked below).
batches=$((post_seconds * 12 > 200 ? post_seconds * 12 : 200))
KW_BENCH_DIR="$(dirname "$0")" python3 - "$work" "$batches" <<'EOF'
import datetime, json, os, sys
sys.path.insert(0, os.environ["KW_BENCH_DIR"])
from kernelindex_record import record
work, batches = sys.argv[1], int(sys.argv[2])
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
def one(batch, key, i):
    at = now - datetime.timedelta(minutes=(batches - batch) * 10) + datetime.timedelta(minutes=i)
    median = 1_000_000 + key * 1000 + (i % 7) * 100
    return record(at, median, f"bench-{key}-{batch}-{i}", f"bench/{key}/{batch}/{i}", "wrk-bench",
                  "bench", f"bench-{key}")
for batch in range(batches):
    with open(f"{work}/batch-{batch}.json", "w") as f:
        json.dump([one(batch, key, i) for key in range(45) for i in range(10)], f)
EOF
(
  n=0
  while [[ $n -lt $batches ]]; do
    start=$(date +%s.%N)
    curl -sf -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
      --data-binary "@$work/batch-$n.json" "http://127.0.0.1:$kw_port/api/v1/runs" || echo "POST failed" >&2
    echo "$start $(date +%s.%N)" >> "$work/posts.txt"
    n=$((n + 1))
  done
) &
poster_pid=$!
# Let the first POST begin before measuring.
for _ in $(seq 1 100); do [[ -s "$work/posts.txt" ]] && break; sleep 0.05; done
wrk -t1 -c4 -d"${post_seconds}s" --latency "http://127.0.0.1:$kw_port/healthz" > "$work/healthz.txt"
kill "$poster_pid" 2>/dev/null || true
wait "$poster_pid" 2>/dev/null || true
poster_pid=""
posts=$(wc -l < "$work/posts.txt")
if [[ $posts -ge $batches ]]; then
  echo "wrk_vs_nginx: all $batches batches were posted before wrk stopped: the latencies below" \
    "include time without POSTs" >&2
fi
mean_post=$(awk '{s += $2 - $1} END {if (NR) printf "%.2f", s / NR; else print "-"}' "$work/posts.txt")
echo
echo "# /healthz (wrk -t1 -c4 -d${post_seconds}s --latency) while 450-run batches are POSTed"
echo "posts completed: $posts (mean $mean_post s each)"
awk '/Latency Distribution/ {on = 1; next} on && /%/ {print "  p" $1 " " $2} /Requests\/sec/ {print "  " $0}' \
  "$work/healthz.txt" | sed 's/%//'
