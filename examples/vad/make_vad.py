#!/usr/bin/python3
"""A small voice-activity model shaped like Silero VAD, and its reference.

    make_vad.py OUTDIR

Silero VAD (v5, shipped in npm packages and most voice pipelines) is called
once per 512-sample chunk of audio: input [1, 512], a recurrent state
[2, 1, H] fed back from the previous call, and the sample rate sr, an int64
that an If tests at run time to pick one of two networks, each a
convolutional front-end and an LSTM. This model has the same structure with
random weights: If(sr == 16000) chooses a branch (a strided Conv1d front-end
of its own, an LSTM whose h and c are the two halves of the state, a linear
head and a sigmoid), outputs the speech probability [1, 1] and the next
state. Each branch is exported by torch.onnx (opset 16) and the If is
assembled around them, as torch.jit.script would write it.

It writes OUTDIR/vad.onnx, and for a stream of CHUNKS chunks of synthetic
audio (a tone in noise, switching on and off), run at 16 kHz and then again at
8 kHz from a zero state: audio.f32 (CHUNKS x 512 float32), and
expected_16000.f32 / expected_8000.f32 (per chunk the probability, then the
final state), torch's own outputs, for examples/vad/vad.c to check against.
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

CHUNK, HIDDEN, CHUNKS = 512, 32, 24


class Branch(torch.nn.Module):
    def __init__(self, stride, seed):
        super().__init__()
        torch.manual_seed(seed)
        self.conv = torch.nn.Conv1d(1, 16, kernel_size=2 * stride, stride=stride)
        self.lstm = torch.nn.LSTM(16, HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, 1)

    def forward(self, x, state):
        f = torch.relu(self.conv(x.unsqueeze(1)))          # [1, 16, T]
        y, (h, c) = self.lstm(f.permute(2, 0, 1), (state[0:1], state[1:2]))
        p = torch.sigmoid(self.head(y[-1]))                 # [1, 1]
        return p, torch.cat([h, c], 0)


def branch_graph(module, tag, path):
    """module exported, then as an If branch: no inputs (it reads the outer
    x and state), every other name prefixed with tag."""
    x, state = torch.zeros(1, CHUNK), torch.zeros(2, 1, HIDDEN)
    torch.onnx.export(module, (x, state), path, input_names=["x", "state"],
                      output_names=["p", "stateN"], opset_version=16)
    g = onnx.load(path).graph
    outer = {"x", "state"}

    def rn(n):  # the outer x is the model's "input"
        return "input" if n == "x" else n if not n or n in outer else tag + n
    for n in g.node:
        n.input[:] = [rn(i) for i in n.input]
        n.output[:] = [rn(o) for o in n.output]
        n.name = rn(n.name)
    for t in g.initializer:
        t.name = rn(t.name)
    outs = [helper.make_tensor_value_info(rn(o.name), TensorProto.FLOAT, None)
            for o in g.output]
    return helper.make_graph(list(g.node), tag + "branch", [], outs, list(g.initializer))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    branches = {16000: Branch(8, 1), 8000: Branch(4, 2)}
    then_g = branch_graph(branches[16000], "b16k_", os.path.join(out, "b16k.onnx"))
    else_g = branch_graph(branches[8000], "b8k_", os.path.join(out, "b8k.onnx"))
    nodes = [helper.make_node("Constant", [], ["rate16k"], name="rate16k",
                              value=numpy_helper.from_array(np.int64(16000), "rate16k")),
             helper.make_node("Equal", ["sr", "rate16k"], ["is16k"], name="is16k"),
             helper.make_node("If", ["is16k"], ["output", "stateN"], name="by_rate",
                              then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(
        nodes, "vad",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, CHUNK]),
         helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, 1, HIDDEN]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("stateN", TensorProto.FLOAT, [2, 1, HIDDEN])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)],
                          producer_name="onnxc-examples")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "vad.onnx"))
    for f in ("b16k.onnx", "b8k.onnx"):
        os.remove(os.path.join(out, f))

    rng = np.random.default_rng(5)
    t = np.arange(CHUNKS * CHUNK) / 16000.0
    on = (np.arange(CHUNKS * CHUNK) // (4 * CHUNK)) % 2 == 1
    audio = (0.05 * rng.standard_normal(t.size) + on * 0.5 * np.sin(2 * np.pi * 440 * t))
    audio = audio.astype(np.float32).reshape(CHUNKS, CHUNK)
    audio.tofile(os.path.join(out, "audio.f32"))
    for sr, module in branches.items():
        state, probs = torch.zeros(2, 1, HIDDEN), []
        with torch.no_grad():
            for chunk in audio:
                p, state = module(torch.from_numpy(chunk).reshape(1, CHUNK), state)
                probs.append(float(p))
        np.concatenate([np.array(probs, np.float32), state.numpy().ravel()]).tofile(
            os.path.join(out, "expected_%d.f32" % sr))


if __name__ == "__main__":
    main()
