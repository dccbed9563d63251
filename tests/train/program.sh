#!/bin/sh
# program.sh FAKE_TRAIN PYTHON - the train program as a program: --help, usage
# errors (2), the initial weights found next to the program, a run with a log,
# a run stopped and resumed giving the same losses, a corrupt checkpoint and
# a wrong batch size refused (1 and 2), a FIFO, a device or a folder where
# any file goes refused at once, never waited on, a class label out of range
# refused, and NaN data with loss scaling stopped with a checkpoint that
# resumes.
set -u
bin=$1
py=${2:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
w=$(mktemp -d "${TMPDIR:-/tmp}/onnxc_train_prog_XXXXXX")
fail() { echo "FAIL: $*"; exit 1; }
expect() { # expect STATUS CMD...: runs CMD, demands its exit status
	want=$1; shift
	"$@" > "$w/out" 2>&1; got=$?
	[ "$got" = "$want" ] || { cat "$w/out"; fail "'$*' exited $got, not $want"; }
}
# a program that opens a FIFO waits for ever: bound it, so that the test
# fails (124) instead of hanging
bounded() { if command -v timeout > /dev/null; then timeout 120 "$@"; else "$@"; fi; }

mkdir -p "$w/data" || fail "mkdir"
cp "$bin" "$w/train" || fail "copy"
expect 0 "$w/train" --help
grep -q "input_x_0.npy" "$w/out" || fail "--help does not list the data files"
expect 2 "$w/train"
expect 2 "$w/train" --data "$w/data"
"$py" "$here/make_init.py" "$w" || { [ $? = 77 ] && exit 77; fail "make_init.py"; }

cd "$w" || fail "cd"
expect 2 ./train --data data --steps 3 --batch 3
grep -q "compiled for batch 8" out || fail "no batch message"
# fake.init is found next to the program, from another folder
mkdir elsewhere && cd elsewhere || fail "cd"
expect 0 ../train --data ../data --steps 9 --log ../full.csv --optimizer adamw --lr 0.05
cd "$w" || fail "cd"
[ "$(wc -l < full.csv)" = 10 ] || fail "full.csv should have a header and 9 lines"
head -1 full.csv | grep -qx "step,epoch,loss,loss_scale,skipped,samples_per_s" || fail "log header"
expect 0 ./train --data data --steps 4 --log part.csv --optimizer adamw --lr 0.05 \
	--checkpoint ck --checkpoint-every 3
[ -f ck/ckpt ] || fail "no checkpoint"
expect 0 ./train --data data --steps 9 --log part.csv --checkpoint ck --resume
cut -d, -f1-3 full.csv > a
cut -d, -f1-3 part.csv > b
cmp -s a b || { diff a b; fail "the resumed run's losses differ"; }
head -c 300 ck/ckpt > ck/short && mv ck/short ck/ckpt
expect 1 ./train --data data --steps 12 --checkpoint ck --resume
grep -q "truncated" out || { cat out; fail "no truncation message"; }
# FIFOs, devices and folders: refused without blocking, named
not_regular() { # not_regular PATH CMD...: exit 1, "PATH: not a regular file"
	p=$1; shift
	expect 1 bounded "$@"
	grep -qF "$p: not a regular file" out || { cat out; fail "'$*': no message for $p"; }
}
mkfifo fifo || fail "mkfifo"
mkdir fifodata && cp data/label.npy fifodata/ && mkfifo fifodata/input_x_0.npy || fail "mkfifo"
not_regular fifodata/input_x_0.npy ./train --data fifodata --steps 2
not_regular fifo ./train --data data --steps 2 --init fifo
not_regular fifo ./train --data data --steps 2 --log fifo
not_regular /dev/null ./train --data data --steps 2 --log /dev/null
not_regular data ./train --data data --steps 2 --log data
not_regular data ./train --data data --steps 2 --init data
mkdir fifock && mkfifo fifock/ckpt || fail "mkfifo"
not_regular fifock/ckpt ./train --data data --steps 2 --checkpoint fifock --resume
not_regular fifock/ckpt ./train --data data --steps 2 --checkpoint fifock
[ -p fifock/ckpt ] || fail "the checkpoint's FIFO was replaced"
# a class label outside [0, 3): refused naming the file, the sample, the value
mkdir badlabel && cp data/input_x_0.npy badlabel/ || fail "copy"
"$py" -c "import numpy as n; y = n.load('data/label.npy'); y[3] = 7; n.save('badlabel/label.npy', y)" ||
	fail "badlabel"
expect 1 ./train --data badlabel --steps 2
grep -qF "badlabel/label.npy: sample 3: class label 7 is not in [0, 3) (data input 'label')" out ||
	{ cat out; fail "no message for the label 7"; }
# NaN data with loss scaling: the scale backs off 40 times to 2^-24, then
# the run stops (1) with a checkpoint that resumes, on finite data, to 0
mkdir nan && cp data/label.npy nan/ || fail "copy"
"$py" -c "import numpy as n; x = n.load('data/input_x_0.npy'); x[:] = n.nan; n.save('nan/input_x_0.npy', x)" ||
	fail "nan data"
expect 1 ./train --data nan --steps 2000 --loss-scale on --checkpoint nanck --log nan.csv
grep -qF "step 41: the gradient of 'W' is not finite at any loss scale" out ||
	{ cat out; fail "no message for NaN data"; }
grep -qF "checkpoint written to nanck/ckpt" out || { cat out; fail "no checkpoint said"; }
[ "$(tail -1 nan.csv | cut -d, -f1,4,5)" = "41,5.96046448e-08,1" ] || fail "the log's last line"
expect 1 ./train --data nan --steps 2000 --checkpoint nanck --resume
grep -qF "step 42:" out || { cat out; fail "the resumed run does not stop at step 42"; }
expect 0 ./train --data data --steps 50 --checkpoint nanck --resume
grep -qF "step 50, epoch 12" out && grep -qF "42 skipped" out || { cat out; fail "resume"; }
rm -f fake.init
expect 1 ./train --data data --steps 2
grep -q "no initial weights" out || fail "no message for a missing .init"
mkfifo fake.init || fail "mkfifo"
not_regular fake.init ./train --data data --steps 2
cd / && rm -rf "$w"
echo "train program ok"
