#!/bin/sh
# CUDA compiler launcher: runs the nvcc command given after the log directory, keeps ptxas's
# resource-usage report (-Xptxas -v) in <log dir>/<object name>.ptxas.txt for the spill check,
# and passes every other diagnostic through to the build log.
set -u
log_dir="$1"
shift
object=""
previous=""
for argument in "$@"; do
  if [ "$previous" = "-o" ]; then object="$argument"; fi
  previous="$argument"
done
mkdir -p "$log_dir"
log="$log_dir/$(basename "${object:-unknown.o}").ptxas.txt"
"$@" 2> "$log.tmp"
status=$?
grep -v -e '^ptxas info' -e '^    [0-9]* bytes stack frame' "$log.tmp" >&2
mv "$log.tmp" "$log"
exit $status
