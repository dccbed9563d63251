#!/bin/sh
# node_import.sh ONNXC NODE_TEST_DIR
# Imports every ONNX backend node test model. Each must either import (exit
# 0) or be refused with a diagnostic (exit 1); any other status (a crash, a
# sanitizer abort, a timeout) fails the test. Prints the counts.
set -u
onnxc=$1 dir=$2
ok=0 refused=0 bad=0
for m in "$dir"/*/model.onnx; do
	timeout 120 "$onnxc" ir "$m" -o /dev/null 2>/dev/null
	case $? in
	0) ok=$((ok + 1)) ;;
	1) refused=$((refused + 1)) ;;
	*) bad=$((bad + 1)); echo "FAIL: $m (status $?)"; "$onnxc" ir "$m" -o /dev/null 2>&1 | tail -5 ;;
	esac
done
echo "imported $ok, refused with a diagnostic $refused, failed $bad"
[ "$bad" -eq 0 ] && [ "$ok" -gt 400 ]
