# Sourced by the daemon benchmarks: their checks, a scratch folder, a token, a config with no
# benchmarks and no notifiers, and the real daemon started on a free port. Expects $kw (the
# binary).

# $1: the benchmark's name for messages; the rest: the tools it needs besides $kw.
kw_require() {
  local name=$1 tool
  shift
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "$name: $tool not found (scripts/setup)" >&2; exit 1; }
  done
  [[ -x "$kw" ]] || { echo "$name: no kernelwatch binary at $kw (--kernelwatch PATH)" >&2; exit 1; }
}

# A scratch folder $work, removed at exit after the daemon ($kw_pid) is stopped. A benchmark
# with more processes to stop sets its own EXIT trap after this.
kw_make_work() {
  work=$(mktemp -d)
  kw_pid=""
  trap kw_cleanup EXIT
}
kw_cleanup() {
  [[ -n "$kw_pid" ]] && kill "$kw_pid" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$work"
}

# A fresh bearer token in $work/token (mode 600); sets $token.
kw_new_token() {
  token="bench-token-$RANDOM$RANDOM$RANDOM"
  printf '%s\n' "$token" > "$work/token"
  chmod 600 "$work/token"
}

# $work/kernelwatch.json for the database $1, CPU backend, listening on a free loopback port;
# with the token file when $token is set; $2: more top-level fields ("\"metrics\": {...},").
kw_write_config() {
  local http="{\"listen\": \"127.0.0.1:0\"}"
  [[ -n "${token:-}" ]] && http="{\"listen\": \"127.0.0.1:0\", \"token_file\": \"$work/token\"}"
  cat > "$work/kernelwatch.json" <<EOF
{
  "storage": {"path": "$1"},
  "http": $http,
  ${2:-}
  "backend": "cpu",
  "benchmarks": [],
  "notifiers": []
}
EOF
}

# Starts the daemon on $work/kernelwatch.json (output in $work/kw.out, kw.err) and waits until it
# listens, for at most $2 tenths of a second (default 1200); sets $kw_pid and $kw_port. $1 names
# the benchmark in the message when it does not start.
kw_start_daemon() {
  "$kw" daemon --config "$work/kernelwatch.json" > "$work/kw.out" 2> "$work/kw.err" &
  kw_pid=$!
  kw_port=""
  for _ in $(seq 1 "${2:-1200}"); do
    kw_port=$(sed -n 's/^kernelwatch: listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/kw.out")
    [[ -n "$kw_port" ]] && return 0
    kill -0 "$kw_pid" 2>/dev/null || { cat "$work/kw.err" >&2; exit 1; }
    sleep 0.1
  done
  echo "$1: kernelwatch did not start" >&2
  exit 1
}
