#!/usr/bin/python3
"""An audio front end end to end: a log-mel spectrogram model compiled and
run by onnxc, against torch.stft and numpy in float64.

usage: logmel.py ONNXC [WORKDIR]

The model (opset 17) is what speech models put in front of their encoder:
HannWindow -> STFT (one-sided) -> magnitude squared -> MatMul by
MelWeightMatrix -> Log. onnxc lowers the STFT to a gather of the frames by
a constant index, the window product and one MatMul by a constant DFT
matrix; the window and the mel filter bank are constants computed at import.
The reference is torch.stft (center=False, the same frames) with
torch.hann_window, and the mel matrix of ONNX's reference
(onnx/reference/ops/op_mel_weight_matrix.py) in numpy. It runs in float64
(the bound is what double rounding of the 400-term sums allows) and in
float32 (bounded by float32's), and prints the largest errors. Exit 77 when
torch is missing.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

try:
    import torch
except ImportError:
    sys.exit(77)

SR, N_FFT, HOP, N_MELS, LO, HI, EPS = 16000, 400, 160, 40, 20.0, 7600.0, 1e-10
BATCH, LENGTH = 2, 16000


def mel_matrix(n_mels, n_fft, sr, lo, hi):
    """ONNX's reference MelWeightMatrix, float32 hertz inputs."""
    lo, hi = np.float32(lo), np.float32(hi)
    low = np.float32(2595) * np.log10(np.float32(1) + lo / np.float32(700))
    high = np.float32(2595) * np.log10(np.float32(1) + hi / np.float32(700))
    step = (high - low) / np.float32(n_mels + 2)
    f = np.arange(0, n_mels + 2) * np.float64(step) + np.float64(low)
    f = 700 * (np.power(10, f / 2595) - 1)
    edges = ((n_fft + 1) * f // sr).astype(int)
    w = np.zeros((n_fft // 2 + 1, n_mels))
    for i in range(n_mels):
        l, c, h = edges[i], edges[i + 1], edges[i + 2]
        if c == l:
            w[c, i] = 1
        else:
            for j in range(l, c + 1):
                w[j, i] = (j - l) / (c - l)
        for j in range(c, h):
            w[j, i] = (h - j) / (h - c)
    return w


def logmel_model(elem):
    c = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in
         (("n_fft", N_FFT), ("hop", HOP), ("n_mels", N_MELS), ("sr", SR), ("axes", [-1]))]
    c += [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in
          (("lo", LO), ("hi", HI))]
    c.append(numpy_helper.from_array(
        np.array(EPS, np.float64 if elem == T.DOUBLE else np.float32), "eps"))
    nodes = [
        helper.make_node("HannWindow", ["n_fft"], ["window"], output_datatype=elem),
        helper.make_node("STFT", ["signal", "hop", "window"], ["spec"]),
        helper.make_node("Mul", ["spec", "spec"], ["sq"]),
        helper.make_node("ReduceSum", ["sq", "axes"], ["power"], keepdims=0),
        helper.make_node("MelWeightMatrix", ["n_mels", "n_fft", "sr", "lo", "hi"], ["mel"],
                         output_datatype=elem),
        helper.make_node("MatMul", ["power", "mel"], ["melspec"]),
        helper.make_node("Add", ["melspec", "eps"], ["melspec_eps"]),
        helper.make_node("Log", ["melspec_eps"], ["logmel"]),
    ]
    frames = 1 + (LENGTH - N_FFT) // HOP
    g = helper.make_graph(nodes, "logmel", [helper.make_tensor_value_info(
        "signal", elem, [BATCH, LENGTH, 1])], [helper.make_tensor_value_info(
            "logmel", elem, [BATCH, frames, N_MELS])], c)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def reference(x):
    """torch.stft in float64, the power times the mel matrix, the log."""
    s = torch.stft(torch.from_numpy(x), N_FFT, hop_length=HOP, win_length=N_FFT,
                   window=torch.hann_window(N_FFT, periodic=True, dtype=torch.float64),
                   center=False, onesided=True, return_complex=True)
    power = (s.abs() ** 2).transpose(1, 2).numpy()  # [batch, frames, bins]
    return np.log(power @ mel_matrix(N_MELS, N_FFT, SR, LO, HI) + EPS)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    onnxc = sys.argv[1]
    work = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp(prefix="logmel.")
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(7)
    t = np.arange(LENGTH) / SR
    x = np.stack([np.sin(2 * np.pi * 440 * t) + 0.1 * rng.standard_normal(LENGTH),
                  rng.standard_normal(LENGTH) * np.linspace(0, 1, LENGTH)])
    ref = reference(x)
    ok = True
    # float64: the lowering is exact up to double rounding; float32: the
    # signal, the DFT matrix and the sums in single precision
    for name, elem, dt, bound in (("float64", T.DOUBLE, np.float64, 1e-10),
                                  ("float32", T.FLOAT, np.float32, 5e-4)):
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        onnx.save(logmel_model(elem), os.path.join(d, "logmel.onnx"))
        np.save(os.path.join(d, "signal.npy"), x.astype(dt)[:, :, None])
        p = subprocess.run([onnxc, "run", os.path.join(d, "logmel.onnx"), "--input",
                            "signal=" + os.path.join(d, "signal.npy"), "--output-dir", d,
                            "--repeat", "1", "--cache-dir", os.path.join(work, "cache")],
                           capture_output=True, text=True)
        if p.returncode:
            print(p.stdout + p.stderr)
            return 1
        y = np.load(os.path.join(d, "logmel.npy")).astype(np.float64)
        err = np.abs(y - ref)
        rel = np.abs(np.exp(y) - np.exp(ref)) / (np.exp(ref) + 1e-30)
        good = y.shape == ref.shape and err.max() <= bound
        ok &= good
        print("logmel %s %s: max |log error| %.3g (bound %g), max relative error of the mel "
              "power %.3g, over %d values in [%.1f, %.1f]"
              % (name, "ok" if good else "FAIL", err.max(), bound, rel.max(), ref.size,
                 ref.min(), ref.max()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
