#!/usr/bin/python3
"""Regenerates examples/classifier.onnx, the model the README's first command
compiles: a small image classifier (Conv-BatchNorm-ReLU-MaxPool twice, then
Gemm) over 1x28x28 inputs with a symbolic batch dimension, exported by torch
at opset 17 with fixed seeded weights.

Usage: /usr/bin/python3 examples/make_example.py
"""
import os

import torch
import torch.nn as nn

torch.manual_seed(0)
net = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
    nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
net.eval()
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "classifier.onnx")
torch.onnx.export(net, torch.randn(1, 1, 28, 28), out, opset_version=17,
                  input_names=["image"], output_names=["logits"],
                  dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
print("wrote", out)
