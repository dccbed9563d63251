#!/bin/sh
# Runs one libFuzzer target for a fixed time on a scratch copy of its corpus
# (new inputs stay in WORK, never in the source tree) plus the regressions.
# usage: run.sh FUZZER SECONDS SEED_DIR REGRESSION_DIR WORK [libFuzzer options]
set -eu
fuzzer=$1 secs=$2 seeds=$3 regressions=$4 work=$5
shift 5
mkdir -p "$work/corpus" "$work/artifacts"
exec "$fuzzer" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=262144 \
	-print_final_stats=1 -artifact_prefix="$work/artifacts/" "$@" \
	"$work/corpus" "$seeds" "$regressions"
