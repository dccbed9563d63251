"""The training test models and their PyTorch reference runs.

    models.py OUTDIR MODEL OPTIMIZER [--steps N] [--precision fp32]

writes OUTDIR/model.onnx (the model at initialisation, exported in training
mode without constant folding, so BatchNormalization stays a node), OUTDIR/data/
(one .npy per graph input: x and label, samples first), and
OUTDIR/reference.json: PyTorch's loss at every step (train() mode, the
batches in file order, no shuffling) and the hyper-parameters, for
tests/train/check.py to compare onnxc's training program with.

Models: an MLP, a small CNN (Conv, BatchNorm, ReLU, MaxPool, AvgPool,
Gemm) and a tiny GPT-style decoder (embeddings, LayerNorm, causal
attention, GELU), each with cross-entropy; plus mse (the MLP on a
regression target).
"""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HYPER = {
    "sgd": dict(lr=0.1, momentum=0.0, weight_decay=1e-4),
    "momentum": dict(lr=0.05, momentum=0.9, weight_decay=1e-4),
    "adamw": dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2),
}


class MLP(nn.Module):
    def __init__(self, nin=16, hidden=32, nout=8):
        super().__init__()
        self.fc1 = nn.Linear(nin, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, nout)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(F.relu(self.fc1(x)))))


class CNN(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class Block(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), -1e9), 1))

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q = q.reshape(b, t, h, d // h).transpose(1, 2)
        k = k.reshape(b, t, h, d // h).transpose(1, 2)
        v = v.reshape(b, t, h, d // h).transpose(1, 2)
        a = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d // h) + self.mask
        y = torch.matmul(torch.softmax(a, dim=-1), v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab=32, d=32, heads=2, seq=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(seq, d) * 0.02)
        self.block = Block(d, heads, seq)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, x):
        return self.head(self.ln(self.block(self.tok(x) + self.pos)))


def make(name, batch, steps, rng):
    """The model, its example input and the data set (x, label)."""
    n = batch * steps
    if name in ("mlp", "mse"):
        model = MLP()
        x = rng.standard_normal((n, 16)).astype(np.float32)
        if name == "mse":
            w = rng.standard_normal((16, 8)).astype(np.float32)
            label = np.tanh(x @ w).astype(np.float32)
        else:
            label = (x[:, :8].argmax(1) + (x[:, 8] > 0)) % 8
        return model, x, label
    if name == "cnn":
        model = CNN()
        label = rng.integers(0, 10, n)
        x = rng.standard_normal((n, 3, 16, 16)).astype(np.float32)
        x[np.arange(n), label % 3, :, :] += 0.5 + 0.1 * (label[:, None, None] // 3)
        return model, x, label
    if name == "gpt":
        model = GPT()
        seqs = (np.arange(n)[:, None] * 3 + np.arange(9)[None, :] * rng.integers(1, 4, (n, 1))) % 32
        return model, seqs[:, :8].astype(np.int64), seqs[:, 1:].astype(np.int64)
    raise SystemExit("unknown model " + name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("model", choices=["mlp", "mse", "cnn", "gpt"])
    ap.add_argument("optimizer", choices=list(HYPER))
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=0)
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    batch = args.batch or {"mlp": 16, "mse": 16, "cnn": 8, "gpt": 4}[args.model]
    model, x, label = make(args.model, batch, args.steps, rng)
    os.makedirs(os.path.join(args.out, "data"), exist_ok=True)
    # exported in training mode (BatchNormalization stays a node with its
    # running statistics; eval mode would fold it into the convolution);
    # the trace runs a forward pass, so the initial state is put back
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    torch.onnx.export(model, (torch.from_numpy(x[:batch]),), os.path.join(args.out, "model.onnx"),
                      input_names=["x"], output_names=["y"], opset_version=14,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)
    model.load_state_dict(state)
    np.save(os.path.join(args.out, "data", "x.npy"), x)
    np.save(os.path.join(args.out, "data", "label.npy"), label)
    model.train()
    hyper = HYPER[args.optimizer]
    if args.optimizer == "adamw":
        opt = torch.optim.AdamW(model.parameters(), **hyper)
    else:
        opt = torch.optim.SGD(model.parameters(), **hyper)
    # a held-out set from the same distribution (classification only): the
    # accuracy PyTorch's trained model reaches on it
    if args.model in ("mlp", "cnn"):
        _, xe, le = make(args.model, batch, 256 // batch, np.random.default_rng(1))
        np.save(os.path.join(args.out, "eval_x.npy"), xe)
        np.save(os.path.join(args.out, "eval_label.npy"), le)
    losses = []
    for step in range(args.steps):
        xb = torch.from_numpy(x[step * batch:(step + 1) * batch])
        lb = torch.from_numpy(label[step * batch:(step + 1) * batch])
        y = model(xb)
        if args.model == "mse":
            loss = F.mse_loss(y, lb)
        else:
            loss = F.cross_entropy(y.reshape(-1, y.shape[-1]), lb.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    # buffers that are not BatchNorm statistics (the GPT's causal mask): ONNX
    # cannot tell them from weights, so onnxc train is told (--frozen)
    params = {n for n, _ in model.named_parameters()}
    frozen = [n for n, v in model.state_dict().items()
              if n not in params and v.is_floating_point() and "running_" not in n]
    accuracy = None
    if args.model in ("mlp", "cnn"):
        model.eval()
        with torch.no_grad():
            pred = model(torch.from_numpy(xe)).argmax(-1).numpy()
        accuracy = float((pred == le).mean())
    json.dump({"model": args.model, "optimizer": args.optimizer, "batch": batch,
               "frozen": frozen, "accuracy": accuracy,
               "steps": args.steps, "loss": "mse" if args.model == "mse" else "cross-entropy",
               "hyper": {k: list(v) if isinstance(v, tuple) else v for k, v in hyper.items()},
               "losses": losses}, open(os.path.join(args.out, "reference.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
