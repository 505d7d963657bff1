# Sourced by the storage benchmarks that need a scratch PostgreSQL 15 server (postgres_scale.sh,
# fleet_post.sh): initdb + pg_ctl in a folder of $work, as nobody when run as root, on a free
# port of 127.0.0.1, a scram password in a pgpass file (never printed), fsync on.

# Sets $bin to the folder of PostgreSQL's programs; $1 names the benchmark in the message.
pg_find_bin() {
  local dir
  bin=""
  for dir in /usr/lib/postgresql/15/bin /usr/lib/postgresql/16/bin /usr/lib/postgresql/17/bin; do
    [[ -x "$dir/pg_ctl" ]] && { bin=$dir; break; }
  done
  [[ -n "$bin" ]] || { echo "$1: postgresql-15 is needed (scripts/setup)" >&2; exit 1; }
}

# Prepares $work/pg for the server (owned by nobody when run as root); sets $as_server (the
# command prefix the server's programs run under) and $pg. Call before the EXIT trap that stops it.
pg_prepare() {
  as_server=()
  if [[ $(id -u) -eq 0 ]]; then
    as_server=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
    chmod 755 "$work"
  fi
  pg="$work/pg"
  mkdir -p "$pg"
  [[ $(id -u) -eq 0 ]] && chown 65534:65534 "$pg"
  return 0
}

# Stops the server at once (for an EXIT trap; nothing when it never started).
pg_stop() {
  "${as_server[@]}" "$bin/pg_ctl" -D "$pg/data" -m immediate stop > /dev/null 2>&1 || true
}

# Creates and starts the server; sets $port, $base (postgresql://kw@127.0.0.1:PORT) and
# $passfile ("passfile=$work/pgpass", for a URL's query).
pg_start() {
  local password
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  password="bench$RANDOM$RANDOM"
  echo "$password" > "$pg/pwfile"
  [[ $(id -u) -eq 0 ]] && chown 65534:65534 "$pg/pwfile"
  "${as_server[@]}" "$bin/initdb" -D "$pg/data" -U kw --auth=scram-sha-256 --pwfile="$pg/pwfile" \
    --no-locale -E UTF8 > "$work/initdb.log"
  "${as_server[@]}" "$bin/pg_ctl" -D "$pg/data" -w -l "$pg/server.log" \
    -o "-p $port -k $pg -c listen_addresses=127.0.0.1" start > /dev/null
  echo "127.0.0.1:$port:*:kw:$password" > "$work/pgpass"
  chmod 600 "$work/pgpass"
  base="postgresql://kw@127.0.0.1:$port"
  passfile="passfile=$work/pgpass"
}
