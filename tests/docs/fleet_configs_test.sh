#!/usr/bin/env bash
# The Alertmanager and Prometheus files docs/FLEET.md shows, checked by the tools operators use:
# each ```yaml block after a `<!-- fleet-check: amtool -->` line goes through
# `amtool check-config`, each after `<!-- fleet-check: promtool -->` through
# `promtool check config` (its rule file taken from config/, where the package installs it from).
# Usage: fleet_configs_test.sh SOURCE_DIR
# Exit 77 (ctest: skipped) without amtool or promtool, except under KERNELWATCH_REQUIRE_NEIGHBOURS=1.
set -euo pipefail
src=$1
page="$src/docs/FLEET.md"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
for tool in amtool promtool; do
  if ! command -v "$tool" >/dev/null; then
    [[ ${KERNELWATCH_REQUIRE_NEIGHBOURS:-} == 1 ]] && fail "$tool is not installed (scripts/setup installs it)"
    echo "fleet_configs_test: skipped: $tool is not installed"
    exit 77
  fi
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/kernelwatch-fleet.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# Writes block n after each marker to $tmp/<tool>-<n>.yml.
awk -v dir="$tmp" '
  /^<!-- fleet-check: (amtool|promtool) -->$/ { tool = $3; next }
  tool != "" && /^```yaml$/ { file = dir "/" tool "-" (++n[tool]) ".yml"; next }
  file != "" && /^```$/ { file = ""; tool = ""; next }
  file != "" { print > file }
' "$page"
amtool_files=("$tmp"/amtool-*.yml)
promtool_files=("$tmp"/promtool-*.yml)
[[ -f ${amtool_files[0]} && -f ${promtool_files[0]} ]] || fail "no checked blocks found in $page"
for file in "${amtool_files[@]}"; do
  amtool check-config "$file" || fail "amtool check-config: block $(basename "$file") of $page"
done
for file in "${promtool_files[@]}"; do
  sed -i "s#/usr/share/kernelwatch/kernelwatch.rules.yml#$src/config/kernelwatch.rules.yml#" "$file"
  promtool check config "$file" || fail "promtool check config: block $(basename "$file") of $page"
done
echo "fleet_configs_test: passed (${#amtool_files[@]} Alertmanager, ${#promtool_files[@]} Prometheus file(s))"
