#!/usr/bin/env bash
# A big key page beside nginx, and what it does to a POST (issue #26).
#
# Imports one key of RUNS runs through the real binary (synthetic_runs.py) plus one small key
# that the POSTs go to, starts kernelwatch (no benchmarks, no notifiers), times the first
# request of /keys/<digest>?last=all (every run charted: a replay and a render), saves its bytes
# and serves them from nginx on loopback (its own temporary prefix, no root), then:
#   1. wrk -t1 -cN -dDURATION on the page, kernelwatch and nginx, for each N;
#   2. POSTS one-run POSTs to the small key, timed by curl, with nothing else running and then
#      while wrk -t1 -c4 loads the key page (the issue's "4 clients on it").
# Prints two tables; everything stays in a temporary directory that is removed at the end.
#
#   bench/daemon/key_page.sh [--kernelwatch PATH] [--runs 8000] [--duration 15]
#                            [--connections "1 4"] [--posts 60]
#
# Needs wrk, nginx, curl and python3 (scripts/setup --bench installs wrk and nginx).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/bench/daemon/daemon_lib.sh"
kw="$root/build/ci/daemon/kernelwatch"
runs=8000
duration=15
connections="1 4"
posts=60

usage() { sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernelwatch) kw=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --posts) posts=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "key_page: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for tool in wrk curl python3; do
  command -v "$tool" >/dev/null || { echo "key_page: $tool not found (scripts/setup --bench)" >&2; exit 1; }
done
nginx=$(command -v nginx || echo /usr/sbin/nginx)
[[ -x "$nginx" ]] || { echo "key_page: nginx not found (scripts/setup --bench)" >&2; exit 1; }
[[ -x "$kw" ]] || { echo "key_page: no kernelwatch binary at $kw (--kernelwatch PATH)" >&2; exit 1; }

work=$(mktemp -d)
kw_pid=""
nginx_pid=""
load_pid=""
cleanup() {
  for pid in $load_pid $nginx_pid $kw_pid; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- kernelwatch with one long key and one small key ------------------------------------------
python3 "$root/bench/daemon/synthetic_runs.py" "$work/long.jsonl" --keys 1 --runs "$runs"
python3 "$root/bench/daemon/synthetic_runs.py" "$work/small.jsonl" --keys 2 --runs 12 \
  --minutes-apart 10
grep '"bench-1"' "$work/small.jsonl" > "$work/posted-key.jsonl"
"$kw" import --db "$work/kw.db" "$work/long.jsonl" "$work/posted-key.jsonl" >/dev/null
kw_new_token
kw_write_config "$work/kw.db"
kw_start_daemon key_page
ref=$(curl -sf "http://127.0.0.1:$kw_port/api/v1/keys" | python3 -c '
import json, sys
print(next(k["digest"][7:] for k in json.load(sys.stdin) if k["workload"] == "bench-0"))')
page="/keys/$ref?last=all"
first=$(curl -sf -o /dev/null -w '%{time_total}' "http://127.0.0.1:$kw_port$page")

# --- nginx serving the same bytes -------------------------------------------------------------
mkdir -p "$work/nginx/html/keys" "$work/nginx/logs"
chmod 711 "$work"
curl -sf "http://127.0.0.1:$kw_port$page" -o "$work/nginx/html/keys/$ref"
chmod -R a+rX "$work/nginx"
bytes=$(stat -c %s "$work/nginx/html/keys/$ref")
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
    location /keys/ { default_type "text/html; charset=utf-8"; }
  }
}
EOF
"$nginx" -p "$work/nginx" -c "$work/nginx/nginx.conf" -g 'daemon off;' &
nginx_pid=$!
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$nginx_port$page" -o /dev/null && break
  sleep 0.1
done
cmp -s <(curl -sf "http://127.0.0.1:$nginx_port$page") "$work/nginx/html/keys/$ref" ||
  { echo "key_page: nginx does not serve the saved bytes" >&2; exit 1; }

rate() {
  wrk -t1 -c"$2" -d"${duration}s" "$1" | awk '/^Requests\/sec:/ {print $2}'
}

echo "# key page of $runs runs, ?last=all: $bytes bytes, first request ${first}s;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); kernelwatch $("$kw" --version 2>/dev/null || echo)"
printf '%6s %12s %12s %7s\n' conns kernelwatch nginx ratio
for c in $connections; do
  k=$(rate "http://127.0.0.1:$kw_port$page" "$c")
  n=$(rate "http://127.0.0.1:$nginx_port$page" "$c")
  ratio=$(python3 -c "print(f'{float(\"$k\") / float(\"$n\"):.2f}')")
  printf '%6s %12s %12s %7s\n' "$c" "$k" "$n" "${ratio}x"
done

# --- one-run POSTs to the small key, alone and while 4 clients load the page ------------------
python3 - "$work" "$posts" <<'EOF'
import datetime, json, sys
work, posts = sys.argv[1], int(sys.argv[2])
template = json.loads(open(f"{work}/posted-key.jsonl").readline())
now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
for i in range(2 * posts):
    run = json.loads(json.dumps(template))
    at = now - datetime.timedelta(seconds=2 * posts - i)
    run["run"]["spec"]["observedAt"] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    run["run"]["spec"]["sourceNative"]["externalId"] = f"bench/posted/{i}"
    run["run"]["metadata"]["name"] = f"bench-posted-{i}"
    with open(f"{work}/post-{i}.json", "w") as f:
        json.dump(run, f)
EOF
post_series() {  # FIRST COUNT -> one time_total per line
  for i in $(seq "$1" $(($1 + $2 - 1))); do
    curl -sf -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $token" \
      -H 'Content-Type: application/json' --data-binary "@$work/post-$i.json" \
      "http://127.0.0.1:$kw_port/api/v1/runs" || echo "POST failed" >&2
  done
}
summary() {
  python3 -c '
import sys
t = sorted(float(x) * 1000 for x in sys.stdin.read().split())
q = lambda p: t[min(len(t) - 1, int(p * len(t)))]
print(f"{len(t):5d} {q(0.5):9.1f} {q(0.9):9.1f} {q(0.99):9.1f} {t[-1]:9.1f}")'
}
echo
echo "# one-run POST /api/v1/runs to another key (ms), curl time_total"
printf '%-34s %5s %9s %9s %9s %9s\n' "" posts p50 p90 p99 max
printf '%-34s ' "alone"
post_series 0 "$posts" | summary
wrk -t1 -c4 -d600s "http://127.0.0.1:$kw_port$page" > "$work/load.txt" &
load_pid=$!
sleep 2  # the load is under way (pacing, not synchronisation)
printf '%-34s ' "while wrk -c4 loads the key page"
post_series "$posts" "$posts" | summary
kill "$load_pid" 2>/dev/null || true
wait "$load_pid" 2>/dev/null || true
load_pid=""
