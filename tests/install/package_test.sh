#!/usr/bin/env bash
# The Debian package on this machine, as root: two packages built from this build by CPack (the
# build's version and an older one), lintian with no error, install of the older one (the user
# in the GPU device group, owners and modes, token, unit enabled, the service user writing its
# database and running the daemon), upgrade to the build's version (config, token and database
# kept) and purge (what the package owns, the config and the state gone).
# Usage: package_test.sh SOURCE_DIR BUILD_DIR CPACK
# Exit 77 (ctest: skipped) when it cannot run here (not root, a tool missing), except under
# KERNELWATCH_REQUIRE_NEIGHBOURS=1 (scripts/test, CI), where that is a failure.
set -euo pipefail
src=$1
build=$2
cpack=$3
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
cannot() {
  [[ ${KERNELWATCH_REQUIRE_NEIGHBOURS:-} == 1 ]] && fail "cannot run: $*"
  echo "package_test: skipped: $*"
  exit 77
}
[[ $(id -u) -eq 0 ]] || cannot "needs root (it installs the package on this machine; CI runs as root)"
for tool in dpkg dpkg-deb dpkg-statoverride lintian adduser deb-systemd-helper runuser setpriv flock; do
  command -v "$tool" >/dev/null || cannot "$tool is missing (scripts/setup installs lintian)"
done
# One package test at a time on this machine, and never over an operator's kernelwatch.
exec 9>/tmp/kernelwatch-package-test.lock
flock -w 900 9 || fail "another package test held the lock for 15 minutes"
if dpkg-query -W -f='${Status}' kernelwatch 2>/dev/null | grep -q 'ok installed'; then
  fail "a kernelwatch package is already installed here; the test will not replace it"
fi
user_existed=0
getent passwd kernelwatch >/dev/null && user_existed=1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kernelwatch-package.XXXXXX")
daemon_pid=""
cleanup() {
  [[ -n $daemon_pid ]] && kill "$daemon_pid" 2>/dev/null
  if dpkg-query -W -f='${Status}' kernelwatch 2>/dev/null | grep -qv 'not-installed'; then
    dpkg --purge kernelwatch >/dev/null 2>&1 || true
  fi
  # The package keeps its system user on purge (Debian policy); the test removes the one it made.
  if [[ $user_existed -eq 0 ]] && getent passwd kernelwatch >/dev/null; then
    userdel kernelwatch 2>/dev/null || true
    getent group kernelwatch >/dev/null && groupdel kernelwatch 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
mode() { stat -c '%a %U:%G' "$1"; }
expect_mode() { [[ $(mode "$2") == "$1" ]] || fail "$2 is $(mode "$2"), expected $1"; }

# 1. Two versions of the package from this build: the build's, and an older one to upgrade from.
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
[[ -n $version ]] || fail "no CPACK_PACKAGE_VERSION in $build/CPackConfig.cmake"
arch=$(dpkg --print-architecture)
old_version="$version~upgrade"
# (cpack writes package/<file> under its working directory, as the build's `deb` target does.)
mkdir -p "$tmp/old" "$tmp/new"
(cd "$tmp/old" && "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/old" \
  -R "$old_version") >"$tmp/cpack-old.log" 2>&1 ||
  { cat "$tmp/cpack-old.log"; fail "cpack (old version) failed"; }
(cd "$tmp/new" && "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/new") \
  >"$tmp/cpack-new.log" 2>&1 || { cat "$tmp/cpack-new.log"; fail "cpack failed"; }
old_deb="$tmp/old/package/kernelwatch_${old_version}_$arch.deb"
new_deb="$tmp/new/package/kernelwatch_${version}_$arch.deb"
[[ -f $old_deb && -f $new_deb ]] || fail "no $old_deb or $new_deb: $(find "$tmp" -name '*.deb')"
echo "package_test: built $(basename "$new_deb") ($(stat -c %s "$new_deb") bytes) and $(basename "$old_deb")"

contents=$(dpkg-deb -c "$new_deb" | awk '{print $6}')
for path in ./usr/bin/kernelwatch ./lib/systemd/system/kernelwatch.service \
  ./etc/kernelwatch/kernelwatch.json ./var/lib/kernelwatch/ \
  ./usr/share/kernelwatch/kernelwatch.example.json ./usr/share/kernelwatch/kernelwatch.gpu.example.json \
  ./usr/share/kernelwatch/runners/liger/liger_bench.py ./usr/share/doc/kernelwatch/CONFIG.md \
  ./usr/share/doc/kernelwatch/copyright ./usr/share/doc/kernelwatch/changelog.gz \
  ./usr/share/man/man1/kernelwatch.1.gz; do
  grep -qxF "$path" <<<"$contents" || fail "the package lacks $path"
done
dpkg-deb -e "$new_deb" "$tmp/control"
[[ $(cat "$tmp/control/conffiles") == /etc/kernelwatch/kernelwatch.json ]] ||
  fail "conffiles: $(cat "$tmp/control/conffiles")"
grep -q '^Depends:.*adduser' "$tmp/control/control" || fail "no Depends on adduser"
grep -q '^Depends:.*libc6' "$tmp/control/control" || fail "no shared-library Depends"

# 2. lintian: no error. Its warnings are listed in docs/PACKAGING.md.
lintian --display-info --tag-display-limit 0 "$new_deb" >"$tmp/lintian.log" 2>&1 || true
sed 's/^/lintian: /' "$tmp/lintian.log"
if grep -q '^E: ' "$tmp/lintian.log"; then fail "lintian reports errors"; fi
echo "package_test: lintian: $(grep -c '^E: ' "$tmp/lintian.log") error(s), $(grep -c '^W: ' "$tmp/lintian.log") warning(s)"

# 3. Install the older package.
dpkg -i "$old_deb" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "dpkg -i failed"; }
[[ $(dpkg-query -W -f='${Version}' kernelwatch) == "$old_version" ]] || fail "not installed"
line=$(getent passwd kernelwatch) || fail "no kernelwatch user"
IFS=: read -r _ _ uid _ _ home shell <<<"$line"
((uid < 1000)) || fail "kernelwatch is not a system user: $line"
[[ $home == /var/lib/kernelwatch && $shell == /usr/sbin/nologin ]] || fail "user entry: $line"
gpu_group=video
[[ -e /dev/nvidiactl ]] && gpu_group=$(stat -c %G /dev/nvidiactl)
if getent group "$gpu_group" >/dev/null; then
  id -nG kernelwatch | tr ' ' '\n' | grep -qx "$gpu_group" ||
    fail "kernelwatch is not in the GPU device group $gpu_group: $(id -nG kernelwatch)"
fi
expect_mode "750 root:kernelwatch" /etc/kernelwatch
expect_mode "640 root:kernelwatch" /etc/kernelwatch/kernelwatch.json
expect_mode "600 root:root" /etc/kernelwatch/env
expect_mode "750 kernelwatch:kernelwatch" /var/lib/kernelwatch
grep -Eq '^KERNELWATCH_TOKEN=[0-9a-f]{64}$' /etc/kernelwatch/env || fail "env has no token"
/usr/bin/kernelwatch --version >/dev/null || fail "the installed binary does not run"
unit=/lib/systemd/system/kernelwatch.service
grep -qx 'ExecStart=/usr/bin/kernelwatch daemon --config /etc/kernelwatch/kernelwatch.json' "$unit" ||
  fail "the unit does not start /usr/bin/kernelwatch: $(grep ExecStart "$unit")"
doc=$(sed -n 's#^Documentation=file://##p' "$unit")
[[ -f $doc ]] || fail "Documentation= $doc is not installed"
[[ $(readlink /etc/systemd/system/multi-user.target.wants/kernelwatch.service) == "$unit" ]] ||
  fail "the unit is not enabled"
if [[ -d /run/systemd/system ]]; then
  echo "package_test: systemd runs here: the postinst started the service"
else
  echo "package_test: no systemd here: the unit is enabled, nothing was started"
fi

# The service user imports history into its state directory and runs the daemon with the
# installed config (as systemd would: the env file's token, the user's own rights), on a port
# of its own choosing so that it cannot collide with anything on this machine.
install -d -m 0755 "$tmp/shared"
install -m 0644 "$src"/data/kernelindex/*.json "$tmp/shared/"
chmod 0755 "$tmp"
runuser -u kernelwatch -- /usr/bin/kernelwatch import --db /var/lib/kernelwatch/kernelwatch.db \
  "$tmp"/shared/*.json || fail "the service user cannot import into /var/lib/kernelwatch"
expect_mode "600 kernelwatch:kernelwatch" /var/lib/kernelwatch/kernelwatch.db
python3 - /etc/kernelwatch/kernelwatch.json "$tmp/shared/listen0.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["http"]["listen"] = "127.0.0.1:0"
config["benchmarks"] = []
json.dump(config, open(sys.argv[2], "w"))
PY
chmod 0644 "$tmp/shared/listen0.json"
(set -a && . /etc/kernelwatch/env && exec setpriv --reuid kernelwatch --regid kernelwatch \
  --init-groups /usr/bin/kernelwatch daemon --config "$tmp/shared/listen0.json") \
  >"$tmp/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 300); do
  grep -q 'kernelwatch: listening on' "$tmp/daemon.log" && break
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$tmp/daemon.log"; fail "the daemon exited"; }
  sleep 0.1
done
port=$(sed -n 's/^kernelwatch: listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/daemon.log")
[[ -n $port ]] || { cat "$tmp/daemon.log"; fail "the daemon did not listen"; }
/usr/bin/kernelwatch status --url "http://127.0.0.1:$port" >/dev/null || fail "status failed"
kill -TERM "$daemon_pid"
wait "$daemon_pid" || fail "the daemon did not stop cleanly: $(tail -5 "$tmp/daemon.log")"
daemon_pid=""

# 4. Upgrade: the operator's config, the token and the database stay.
sed -i 's/"interval": "15m"/"interval": "30m"/' /etc/kernelwatch/kernelwatch.json
grep -q '"interval": "30m"' /etc/kernelwatch/kernelwatch.json || fail "test edit failed"
token=$(cat /etc/kernelwatch/env)
db_before=$(sha256sum </var/lib/kernelwatch/kernelwatch.db)
dpkg -i "$new_deb" >"$tmp/upgrade.log" 2>&1 || { cat "$tmp/upgrade.log"; fail "the upgrade failed"; }
[[ $(dpkg-query -W -f='${Version}' kernelwatch) == "$version" ]] || fail "not upgraded"
grep -q '"interval": "30m"' /etc/kernelwatch/kernelwatch.json || fail "the upgrade overwrote the config"
[[ ! -e /etc/kernelwatch/kernelwatch.json.dpkg-new && ! -e /etc/kernelwatch/kernelwatch.json.dpkg-dist ]] ||
  fail "the upgrade left a .dpkg-new/.dpkg-dist config"
[[ $(cat /etc/kernelwatch/env) == "$token" ]] || fail "the upgrade changed the token"
[[ $(sha256sum </var/lib/kernelwatch/kernelwatch.db) == "$db_before" ]] || fail "the upgrade changed the database"
[[ $(getent passwd | grep -c '^kernelwatch:') -eq 1 ]] || fail "a second kernelwatch user"
expect_mode "750 root:kernelwatch" /etc/kernelwatch
expect_mode "640 root:kernelwatch" /etc/kernelwatch/kernelwatch.json
expect_mode "750 kernelwatch:kernelwatch" /var/lib/kernelwatch
keys=$(/usr/bin/kernelwatch keys --db /var/lib/kernelwatch/kernelwatch.db --json |
  python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[[ $keys -eq 2 ]] || fail "the database has $keys keys after the upgrade, expected the fixtures' 2"

# 5. Purge: the package's files, the config, the token, the state and the records are gone.
dpkg --purge kernelwatch >"$tmp/purge.log" 2>&1 || { cat "$tmp/purge.log"; fail "purge failed"; }
dpkg-query -W -f='${Status}' kernelwatch 2>/dev/null | grep -q 'ok installed' && fail "still installed"
for path in /usr/bin/kernelwatch "$unit" /etc/kernelwatch /var/lib/kernelwatch \
  /usr/share/kernelwatch /usr/share/doc/kernelwatch \
  /etc/systemd/system/multi-user.target.wants/kernelwatch.service; do
  [[ -e $path || -L $path ]] && fail "$path is still there after the purge"
done
dpkg-statoverride --list | grep -q kernelwatch && fail "statoverrides left: $(dpkg-statoverride --list | grep kernelwatch)"
getent passwd kernelwatch >/dev/null || fail "the purge removed the system user (Debian policy keeps it)"
echo "package_test: passed"
