#!/bin/sh
# zoo_calibrated.sh ONNXC PYTHON CASE WORK [CHECK ARGS...]
# Calibrated mixed precision on a zoo model, checked on the case's own
# test_data_set_0, which calibration never sees (docs/precision.md#calibration).
# It calibrates on CASE/calibration where the zoo wrote one (the trained
# models: more images of their task, other seeds), else on fresh inputs
# from calib_inputs.py (the zoo's input distribution, another seed; two
# samples) in WORK.
set -u
onnxc=$1 py=$2 case=$3 work=$4
shift 4
if [ -d "$case/calibration" ]; then
	exec "$onnxc" check "$case" --precision mixed --calibrate "$case/calibration" "$@"
fi
rm -rf "$work"
"$py" "$(dirname "$0")/calib_inputs.py" "$case" "$work" --samples 2 || exit 1
exec "$onnxc" check "$case" --precision mixed --calibrate "$work" "$@"
