#!/bin/sh
# Runs one libFuzzer target on a scratch copy of its corpus (new inputs stay
# in WORK, never in the source tree) plus the regressions. Two modes:
#   run.sh FUZZER SECONDS SEED_DIR REGRESSION_DIR WORK [libFuzzer options]
#       explores at random for SECONDS, growing WORK's corpus across runs
#       (scripts/fuzz);
#   run.sh FUZZER runs=N SEED_DIR REGRESSION_DIR WORK [libFuzzer options]
#       replays the seeds and regressions, then explores N inputs from a fixed
#       seed on an emptied WORK: the same commit always runs the same inputs,
#       so the verdict depends on nothing but the code (CTest, CI). The
#       corpus is not reloaded (libFuzzer rereads it by the clock) and, where
#       setarch allows it, addresses are not randomized (hash and arena
#       layouts, and with them the coverage that guides the search, follow
#       addresses): three runs then explore exactly the same inputs.
# Inputs are capped at 256 KiB and 2 GiB of memory. The per-input timeout is
# 10 s when exploring and 120 s for the fixed runs: there it only catches
# hangs, never a slow machine (the work of every input is bounded by the
# importer's budgets, docs/security.md).
set -eu
fuzzer=$1 mode=$2 seeds=$3 regressions=$4 work=$5
shift 5
fixed=""
case $mode in
runs=*)
	rm -rf "$work"
	set -- -runs="${mode#runs=}" -seed=1 -reload=0 -timeout=120 "$@"
	if setarch "$(uname -m)" -R true 2>/dev/null; then
		fixed="setarch $(uname -m) -R"
	fi
	;;
*) set -- -max_total_time="$mode" -timeout=10 "$@" ;;
esac
mkdir -p "$work/corpus" "$work/artifacts"
# shellcheck disable=SC2086
exec $fixed "$fuzzer" -rss_limit_mb=2048 -max_len=262144 -print_final_stats=1 \
	-artifact_prefix="$work/artifacts/" "$@" "$work/corpus" "$seeds" "$regressions"
