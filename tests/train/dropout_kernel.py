"""Training-mode dropout's masks: the compiled CPU kernels against the
document, and the document's stream against the statistics a mask needs.

    dropout_kernel.py ONNXC

1. `onnxc run` compiles small IR modules with dropout (f32 and f16, alone
   and fused between other elementwise ops, several salts) and runs them
   with a seed; every output element must equal, bit for bit, what
   docs/ir.md#dropout says (tests/train/models.py implements it from the
   document with numpy).
2. The stream itself, on 2^20 elements: the kept fraction is 1 - ratio
   within 5 standard deviations, two salts, two seeds and two steps draw
   independent masks (agreement p^2 + (1-p)^2 within 5 sigma), and
   neighbouring elements are not correlated.

Exits 77 without numpy.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from models import dropout_keep, dropout_scale, step_seed  # noqa: E402 (numpy only)

failures = 0


def check(ok, what):
    global failures
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    failures += not ok


def run_module(onnxc, work, name, text, inputs):
    path = os.path.join(work, name + ".oir")
    with open(path, "w") as f:
        f.write(text)
    cmd = [onnxc, "run", path, "--repeat", "1", "--cache-dir", os.path.join(work, "cache"),
           "--output-dir", os.path.join(work, name)]
    for k, v in inputs.items():
        np.save(os.path.join(work, "%s_%s.npy" % (name, k)), v)
        cmd += ["--input", "%s=%s" % (k, os.path.join(work, "%s_%s.npy" % (name, k)))]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return lambda out: np.load(os.path.join(work, name, out + ".npy"))


def masked(x, seed, salt, ratio):
    keep = dropout_keep(seed, salt, ratio, x.shape)
    m = np.where(keep, dropout_scale(ratio), np.float32(0))
    if x.dtype == np.float16:  # computed in f32, rounded to half once
        return (x.astype(np.float32) * m).astype(np.float16)
    return x * m


def kernels(onnxc, work):
    rng = np.random.default_rng(5)
    seed = np.int64(-8231749287416123)  # negative: the bits are what count
    useed = int(seed) & ((1 << 64) - 1)
    x = rng.standard_normal((3, 5, 7)).astype(np.float32)
    x[0, 0, :3] = [np.inf, -np.inf, np.nan]
    out = run_module(onnxc, work, "alone", """onnxc-ir 1
module "alone"
input %x : f32[3,5,7]
input %seed : i64[]
%y : f32[3,5,7] = dropout(%x, %seed) {ratio=0.3, salt=5} @d
output %y
""", {"x": x, "seed": seed})
    y, want = out("y"), masked(x, useed, 5, 0.3)
    check(np.array_equal(y, want, equal_nan=True), "f32 dropout alone, inf/nan included")
    # fused: relu -> dropout -> add of a broadcast row, and a second salt
    # on the same input; half storage
    h = rng.standard_normal((64, 33)).astype(np.float16)
    b = rng.standard_normal((33,)).astype(np.float16)
    out = run_module(onnxc, work, "fused", """onnxc-ir 1
module "fused"
input %h : f16[64,33]
input %b : f16[33]
input %seed : i64[]
%r : f16[64,33] = relu(%h) @r
%d : f16[64,33] = dropout(%r, %seed) {ratio=0.9, salt=0} @d0
%y : f16[64,33] = add(%d, %b) @a
%z : f16[64,33] = dropout(%h, %seed) {ratio=0.5, salt=1} @d1
output %y
output %z
""", {"h": h, "b": b, "seed": np.int64(42)})
    want_y = (masked(np.maximum(h, 0), 42, 0, 0.9).astype(np.float32) + b).astype(np.float16)
    check(np.array_equal(out("y"), want_y), "f16 dropout fused between relu and add")
    check(np.array_equal(out("z"), masked(h, 42, 1, 0.5)), "f16 dropout, second salt")


def stream():
    n = 1 << 20
    for ratio in (0.1, 0.5, 0.9):
        keep = dropout_keep(step_seed(0, 0), 0, ratio, (n,))
        p = 1 - ratio
        sigma = (p * (1 - p) / n) ** 0.5
        check(abs(keep.mean() - p) < 5 * sigma,
              "ratio %.1f: kept %.5f of %d (expected %.5f +- %.5f)"
              % (ratio, keep.mean(), n, p, 5 * sigma))
    p = 0.5
    sigma = (0.25 / n) ** 0.5
    a = dropout_keep(step_seed(0, 0), 0, p, (n,))
    for what, b in (("salts 0 and 1", dropout_keep(step_seed(0, 0), 1, p, (n,))),
                    ("steps 0 and 1", dropout_keep(step_seed(0, 1), 0, p, (n,))),
                    ("seeds 0 and 1", dropout_keep(step_seed(1, 0), 0, p, (n,))),
                    ("neighbouring elements", np.roll(a, 1))):
        agree = float((a == b).mean())
        check(abs(agree - 0.5) < 5 * sigma, "%s agree on %.5f of the elements (0.5 +- %.5f)"
              % (what, agree, 5 * sigma))


def main():
    onnxc = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="onnxc-dropout-") as work:
        kernels(onnxc, work)
    stream()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
