#!/usr/bin/env bash
# scripts/install into a temporary root (--root: no systemctl, users created with useradd
# --root when run as root), from the build these tests belong to: the files, modes and owners
# the install sequence promises, history imported as the service user's, and a second run that
# upgrades without touching the operator's config, token or database.
# Usage: install_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kernelwatch-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
root="$tmp/root"
mkdir -p "$root"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
mode() { stat -c %a "$1"; }
expect_mode() { [[ $(mode "$2") == "$1" ]] || fail "$2 has mode $(mode "$2"), expected $1"; }

"$src/scripts/install" --root "$root" --build-dir "$build" \
  --import "$src"/data/kernelindex/*.json >"$tmp/first.log" 2>&1 || {
  cat "$tmp/first.log"
  fail "scripts/install exited non-zero"
}
cat "$tmp/first.log"

kw="$root/usr/local/bin/kernelwatch"
[[ -x $kw ]] || fail "no $kw"
"$kw" --version >/dev/null || fail "the installed binary does not run"
unit="$root/usr/local/lib/systemd/system/kernelwatch.service"
[[ -f $unit ]] || fail "no unit at $unit"
# What the unit points at is what the install put there.
exec_start=$(sed -n 's/^ExecStart=\([^ ]*\) .*/\1/p' "$unit")
[[ -x $root$exec_start ]] || fail "ExecStart $exec_start is not installed"
doc=$(sed -n 's#^Documentation=file://##p' "$unit")
[[ -f $root$doc ]] || fail "Documentation= $doc is not installed"
grep -q "Installing as a service" "$root$doc" || fail "$doc lacks the install sequence"
[[ -f $root/usr/local/share/kernelwatch/runners/liger/liger_bench.py ]] || fail "no liger_bench.py"

expect_mode 750 "$root/etc/kernelwatch"
expect_mode 640 "$root/etc/kernelwatch/kernelwatch.json"
expect_mode 600 "$root/etc/kernelwatch/env"
grep -Eq '^KERNELWATCH_TOKEN=[0-9a-f]{64}$' "$root/etc/kernelwatch/env" || fail "env has no token"
grep -q '"/var/lib/kernelwatch/kernelwatch.db"' "$root/etc/kernelwatch/kernelwatch.json" ||
  fail "the config does not keep its state in /var/lib/kernelwatch"
expect_mode 750 "$root/var/lib/kernelwatch"
db="$root/var/lib/kernelwatch/kernelwatch.db"
expect_mode 600 "$db"
keys=$("$kw" keys --db "$db" --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[[ $keys -eq 2 ]] || fail "the imported database has $keys keys, expected the fixtures' 2"

if [[ $(id -u) -eq 0 ]]; then
  line=$(grep '^kernelwatch:' "$root/etc/passwd") || fail "no kernelwatch user"
  [[ $line == *":/var/lib/kernelwatch:/usr/sbin/nologin" ]] || fail "user entry: $line"
  uid=$(cut -d: -f3 <<<"$line")
  grep -Eq '^video:[^:]*:[0-9]+:(.*,)?kernelwatch(,.*)?$' "$root/etc/group" ||
    fail "kernelwatch is not in the GPU device group: $(grep '^video:' "$root/etc/group")"
  [[ $(stat -c %u "$db") == "$uid" ]] || fail "the database belongs to uid $(stat -c %u "$db"), not kernelwatch ($uid)"
  [[ $(stat -c %u "$root/var/lib/kernelwatch") == "$uid" ]] || fail "the state directory is not kernelwatch's"
  [[ $(stat -c %U "$root/etc/kernelwatch/env") == root ]] || fail "env is not root's"
else
  echo "install_test: not root: user, group and owners not checked (useradd --root needs root)"
fi

# An upgrade: the operator's config, token and database stay; no second user.
sed -i 's/"interval": "15m"/"interval": "30m"/' "$root/etc/kernelwatch/kernelwatch.json"
grep -q '"interval": "30m"' "$root/etc/kernelwatch/kernelwatch.json" || fail "test edit failed"
token=$(cat "$root/etc/kernelwatch/env")
before=$(sha256sum "$db")
"$src/scripts/install" --root "$root" --build-dir "$build" >"$tmp/second.log" 2>&1 || {
  cat "$tmp/second.log"
  fail "the second scripts/install exited non-zero"
}
grep -q '"interval": "30m"' "$root/etc/kernelwatch/kernelwatch.json" || fail "the upgrade overwrote the config"
[[ $(cat "$root/etc/kernelwatch/env") == "$token" ]] || fail "the upgrade changed the token"
[[ $(sha256sum "$db") == "$before" ]] || fail "the upgrade changed the database"
grep -q "kept $root/etc/kernelwatch/kernelwatch.json" "$tmp/second.log" || fail "the upgrade did not say it kept the config"
if [[ $(id -u) -eq 0 ]]; then
  [[ $(grep -c '^kernelwatch:' "$root/etc/passwd") -eq 1 ]] || fail "a second kernelwatch user"
fi

# Another prefix: the unit names that prefix's binary and docs.
mkdir -p "$tmp/opt-root"
"$src/scripts/install" --root "$tmp/opt-root" --prefix /opt/kernelwatch --build-dir "$build" \
  >"$tmp/third.log" 2>&1 || {
  cat "$tmp/third.log"
  fail "scripts/install --prefix /opt/kernelwatch exited non-zero"
}
unit="$tmp/opt-root/opt/kernelwatch/lib/systemd/system/kernelwatch.service"
grep -q '^ExecStart=/opt/kernelwatch/bin/kernelwatch daemon' "$unit" || fail "ExecStart not rewritten"
doc=$(sed -n 's#^Documentation=file://##p' "$unit")
[[ -f $tmp/opt-root$doc ]] || fail "Documentation= $doc is not installed under /opt/kernelwatch"
echo "install_test: passed"
