#!/usr/bin/env python3
"""Fused attention against the decomposed graph it replaces.

    check_fusion.py ONNXC SMALL_DIR ZOO_DIR

For tests/models/small.py's attention_fused_forms (every form
passes/attention.c accepts) and the zoo's BERT, GPT and ViT, runs the model
with the fusion (the default) and with --no-fuse-attention on the same
inputs and checks that:
  - `onnxc compile` fused the attention nodes it should (all of them);
  - FP32 outputs agree to 1e-6 relative to the output's largest magnitude;
  - the f16 forms' outputs (yd: f16 Q.K^T, softcap, an FP32 softmax between
    casts; yf: P.V in FP32 with V widened from f16) are at most as far from
    a float64 evaluation as the decomposed graph's (FlashAttention's own
    tests allow twice that);
  - the arena of a fused causal attention block does not grow with the
    square of the sequence: from 256 to 1024 tokens it grows about 4x
    (linearly) where the decomposed graph's grows about 16x.
Exits 1 with the reason on the first failure.
"""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        fail("%s exited with %d:\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r.stdout


def run_model(onnxc, model, inputs, extra, out_dir):
    args = []
    for name, path in inputs:
        args += ["--input", "%s=%s" % (name, path) if name else path]
    run([onnxc, "run", model, "--output-dir", out_dir, "--repeat", "1"] + args + extra)
    return {f[:-4]: np.load(os.path.join(out_dir, f)) for f in os.listdir(out_dir)}


def fused_count(onnxc, model, extra, work):
    out = run([onnxc, "compile", model, "-o", os.path.join(work, "c")] + extra)
    m = re.search(r"attention: (\d+) fused from MatMul-Softmax-MatMul, (\d+) left", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0), out


def arena_mb(out):
    return float(re.search(r"arena ([0-9.]+) MB", out).group(1))


def softcap_reference(x):
    """Form d of attention_fused_forms in float64."""
    q, kt, v, pad = (x[n].astype(np.float64) for n in ("qa", "ka", "va", "pad"))
    q, k, v = (a.astype(np.float16).astype(np.float64) for a in (q, kt, v))
    s = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(8))
    s = 5 * np.tanh(s / 5)
    s = np.where(pad, np.finfo(np.float32).min, s)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p @ v


def widened_reference(x):
    """Form f of attention_fused_forms in float64."""
    q, k, v = (x[n].astype(np.float16).astype(np.float64) for n in ("qa", "ka", "va"))
    s = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(8))
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return p @ v


def check_pair(name, fused, plain, keys):
    for k in keys:
        a, b = fused[k], plain[k]
        scale = max(np.abs(b).max(), 1e-30)
        err = np.abs(a.astype(np.float64) - b).max() / scale
        print("%s %s: fused vs decomposed %.2e (relative to the largest output)" % (name, k, err))
        if not err <= 1e-6:
            fail("%s output %s: fused and decomposed differ by %.3g" % (name, k, err))


def main():
    onnxc, small, zoo = sys.argv[1:4]
    rng = np.random.default_rng(3)
    with tempfile.TemporaryDirectory() as work:
        # every accepted form
        model = os.path.join(small, "attention_fused_forms.onnx")
        g = onnx.load(model).graph
        (n, left), _ = fused_count(onnxc, model, [], work)
        if n != 6 or left:
            fail("attention_fused_forms: %d fused, %d left (want 6, 0)" % (n, left))
        feeds, x = [], {}
        for i in g.input:
            shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
            a = (rng.random(shape) < 0.7 if i.type.tensor_type.elem_type == onnx.TensorProto.BOOL
                 else rng.standard_normal(shape).astype(np.float32))
            x[i.name] = a
            path = os.path.join(work, i.name + ".npy")
            np.save(path, a)
            feeds.append((i.name, path))
        fused = run_model(onnxc, model, feeds, [], os.path.join(work, "f"))
        plain = run_model(onnxc, model, feeds, ["--no-fuse-attention"], os.path.join(work, "p"))
        check_pair("attention_fused_forms", fused, plain, ["ya", "yb", "yc", "ye"])
        for key, ref in (("yd", softcap_reference(x)), ("yf", widened_reference(x))):
            ef, ep = (np.abs(o[key] - ref).max() for o in (fused, plain))
            print("attention_fused_forms %s (f16): fused %.2e, decomposed %.2e from float64"
                  % (key, ef, ep))
            if not ef <= ep:
                fail("the fused f16 attention %s is further from float64 (%.3g) than the "
                     "decomposed graph (%.3g)" % (key, ef, ep))
        # the zoo's transformers, on their reference inputs
        for m, dims in (("bert", ["--dim", "batch=2", "--dim", "seq=16"]),
                        ("gpt", ["--dim", "batch=2", "--dim", "seq=32"]),
                        ("vit", ["--dim", "batch=2"])):
            model = os.path.join(zoo, m, "model.onnx")
            (n, left), _ = fused_count(onnxc, model, dims, work)
            if n < 1 or left:
                fail("zoo %s: %d fused, %d left" % (m, n, left))
            data = os.path.join(zoo, m, "test_data_set_0")
            inputs = sorted(f for f in os.listdir(data) if f.startswith("input_"))
            feeds = [(None, os.path.join(data, f)) for f in inputs]
            fused = run_model(onnxc, model, feeds, dims, os.path.join(work, m + "f"))
            plain = run_model(onnxc, model, feeds, dims + ["--no-fuse-attention"],
                              os.path.join(work, m + "p"))
            check_pair("zoo " + m, fused, plain, sorted(plain))
        # memory: linear in the sequence, not quadratic (a causal block of
        # 4 heads of 64, as torch exports it)
        mb = {}
        for seq in (256, 1024):
            model = os.path.join(work, "block%d.onnx" % seq)
            onnx.save(models.decomposed(1, 4, seq, 64, True), model)
            for flag in ([], ["--no-fuse-attention"]):
                (n, _), out = fused_count(onnxc, model, flag, work)
                mb[(seq, bool(flag))] = arena_mb(out)
        gp = mb[(1024, True)] / mb[(256, True)]
        print("attention block arena 256 -> 1024 tokens: fused %.2f -> %.2f MB, decomposed "
              "%.2f -> %.2f MB (x%.1f)" % (mb[(256, False)], mb[(1024, False)],
                                          mb[(256, True)], mb[(1024, True)], gp))
        if not mb[(1024, False)] <= 4 * mb[(256, False)] + 0.01 or not gp > 10:
            fail("the arenas do not grow as they should (fused linearly, decomposed with the "
                 "square of the sequence)")
    print("ok")


if __name__ == "__main__":
    main()
