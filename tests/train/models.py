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
attention, GELU), each with cross-entropy; mse (the MLP on a regression
target); drop (the MLP with two training-mode Dropouts); up (nearest and
bilinear upsampling: Resize, with a skip connection); lstm and gru (an
nn.LSTM or nn.GRU over 8 steps and a Linear head on the last one,
cross-entropy and MSE: backpropagation through time); branch (a
data-dependent if: an ONNX If whose condition is known only at run time)
and loop (a loop of a residual block: an ONNX Loop onnxc unrolls), both
scripted, with cross-entropy; sce and nll (the
MLP exported with its loss, trained with --loss none: cross-entropy with
class weights and an ignore_index some labels take, SoftmaxCrossEntropyLoss
in the export; nll_loss over [N, C, T], NegativeLogLikelihoodLoss). PyTorch cannot draw
onnxc's masks, so the reference run of drop multiplies by the masks
dropout_masks() computes from docs/ir.md#dropout and docs/training.md#dropout
(written here from the documents, not from onnxc's code); PyTorch's own
Dropout is what the export records.

--ranks R is the reference of a data-parallel run (docs/training.md#data-
parallel-training) of R ranks, as PyTorch's DistributedDataParallel trains
it: model.onnx takes the per-rank batch (BATCH / R, default the model's
batch), each step's global batch of BATCH samples is split into R shares
in order, each share's loss is computed on its own (its own BatchNorm batch
statistics, its own dropout masks: the seed's entry step * R + r) and the
gradients are those of the mean of the R losses; BatchNorm's running
statistics are rank 0's (DDP broadcasts rank 0's buffers).
"""
import argparse
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# the classifiers whose trained export is checked on a held-out set
ACCURACY = ("mlp", "cnn", "drop", "up", "lstm", "branch", "loop")

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


class SeqNet(nn.Module):
    """A recurrent sequence model: an LSTM (or GRU) over [B, T=8, 8]
    (batch_first: Transposes around the ONNX node) whose last step a Linear
    head reads; its gradients come from the node unrolled through time."""
    def __init__(self, cell, nin=8, hidden=16, nout=4):
        super().__init__()
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(nin, hidden, batch_first=True)
        self.head = nn.Linear(hidden, nout)

    def forward(self, x):
        return self.head(self.rnn(x)[0][:, -1])


class BranchNet(nn.Module):
    """A data-dependent branch: tanh(a(h)) for a batch whose mean is
    positive, relu(bn(b(h))) otherwise. Exported through TorchScript
    (torch.jit.script), the branch stays an ONNX If whose condition is known
    only at run time; training differentiates the branch taken, a and b each
    train on their own batches, and the BatchNorm's running statistics move
    only on the else batches (the held-out accuracy and the export, in
    eval() mode, read them). The condition reads the input, so every
    batch's choice has a wide margin (about 0.5) and no rounding can flip it
    between PyTorch and onnxc."""
    def __init__(self, nin=16, hidden=32, nout=8):
        super().__init__()
        self.fc1 = nn.Linear(nin, hidden)
        self.a = nn.Linear(hidden, hidden)
        self.b = nn.Linear(hidden, hidden)
        self.bn = nn.BatchNorm1d(hidden)
        self.fc3 = nn.Linear(hidden, nout)

    def forward(self, x):
        h = torch.tanh(self.fc1(x))
        if x.mean() > 0:
            h = torch.tanh(self.a(h))
        else:
            h = F.relu(self.bn(self.b(h)))
        return self.fc3(h)


class LoopNet(nn.Module):
    """A residual block applied three times by a loop. The trip count comes
    from the input's shape (16 // 5), which scripting cannot see as a
    constant, so the export keeps an ONNX Loop (whose count, with static
    shapes, is a Constant): onnxc unrolls it at import
    (frontend/ops_loop.c), and the three iterations share lin's weights."""
    def __init__(self, nin=16, hidden=32, nout=8):
        super().__init__()
        self.fc1 = nn.Linear(nin, hidden)
        self.lin = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, nout)

    def forward(self, x):
        h = self.fc1(x)
        for _ in range(x.size(1) // 5):
            h = torch.tanh(self.lin(h)) + h
        return self.fc3(h)


class UpNet(nn.Module):
    """An encoder-decoder step: max pooling down, nearest and bilinear
    upsampling back (Resize in the export), a skip connection."""
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, classes)

    def forward(self, x):
        a = F.relu(self.conv1(x))                                   # 16x16
        b = F.relu(self.conv2(F.max_pool2d(a, 2)))                  # 8x8
        c = F.interpolate(F.max_pool2d(b, 2), scale_factor=2.0, mode="nearest")     # 8x8
        d = F.interpolate(b + c, size=(16, 16), mode="bilinear", align_corners=False)
        e = F.relu(self.conv3(d + a))
        return self.fc(e.mean((2, 3)))


class MLPDrop(nn.Module):
    """The MLP with Dropout after each hidden activation. With masks set
    (one array per Dropout, in graph order), multiplies by them instead of
    drawing its own."""
    RATIOS = (0.2, 0.5)

    def __init__(self, nin=16, hidden=32, nout=8):
        super().__init__()
        self.fc1 = nn.Linear(nin, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, nout)
        self.masks = None

    def drop(self, x, i):
        if self.masks is not None and self.training:
            return x * torch.from_numpy(self.masks[i])
        return F.dropout(x, self.RATIOS[i], self.training)

    def forward(self, x):
        x = self.drop(F.relu(self.fc1(x)), 0)
        return self.fc3(self.drop(torch.tanh(self.fc2(x)), 1))


class MLPLoss(nn.Module):
    """The MLP and its loss, with class weights (a buffer: --frozen):
    forward(x, label) is the loss. sce: F.cross_entropy, ignore_index -1;
    nll: x [N, T, 16], the classes moved to axis 1, F.nll_loss of the log
    probabilities over them (PyTorch's default ignore_index, -100, which no
    label takes)."""
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        self.mlp = MLP()
        self.register_buffer("class_weight", torch.linspace(0.5, 2.0, 8))

    def forward(self, x, label):
        y = self.mlp(x)
        if self.kind == "sce":
            return F.cross_entropy(y, label, weight=self.class_weight, ignore_index=-1)
        # the log probabilities by hand: the export would fuse
        # F.log_softmax and F.nll_loss into one SoftmaxCrossEntropyLoss
        y = y.transpose(1, 2)
        return F.nll_loss(y - torch.logsumexp(y, 1, keepdim=True), label,
                          weight=self.class_weight)


M64 = (1 << 64) - 1
GOLDEN = 0x9e3779b97f4a7c15


def mix64(z):
    """SplitMix64's finalizer on a Python int or a numpy uint64 array."""
    if isinstance(z, int):
        z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
        z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
        return z ^ (z >> 31)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        return z ^ (z >> np.uint64(31))


def dropout_keep(seed, salt, ratio, shape):
    """docs/ir.md#dropout: which elements a dropout node with this salt keeps
    when run with this seed."""
    key = mix64((seed + (salt + 1) * GOLDEN) & M64)
    n = int(np.prod(shape))
    with np.errstate(over="ignore"):
        idx = np.arange(1, n + 1, dtype=np.uint64) * np.uint64(GOLDEN) + np.uint64(key)
    thr = int(float(np.float32(ratio)) * 2.0**24 + 0.5)
    return ((mix64(idx) >> np.uint64(40)) >= np.uint64(thr)).reshape(shape)


def dropout_scale(ratio):
    r = float(np.float32(ratio))
    return np.float32(1.0 / (1.0 - r)) if r < 1 else np.float32(0)


def step_seed(seed, steps):
    """docs/training.md#dropout: the dropout seed of the step after `steps`."""
    k = (seed ^ 0x6f6e6e7864726f70) & M64
    key = mix64((k + GOLDEN) & M64)
    return mix64((key + (steps + 1) * GOLDEN) & M64)


def dropout_masks(seed, steps, shapes, ratios):
    s = step_seed(seed, steps)
    return [np.where(dropout_keep(s, i, r, sh), dropout_scale(r), np.float32(0))
            for i, (sh, r) in enumerate(zip(shapes, ratios))]


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
    if name == "branch":  # each batch shifted by +-0.5: both branches, about half each
        x = rng.standard_normal((n, 16)).astype(np.float32)
        label = (x[:, :8].argmax(1) + (x[:, 8] > 0)) % 8
        x += np.repeat(rng.choice([-0.5, 0.5], steps), batch).astype(np.float32)[:, None]
        return BranchNet(), x, label
    if name == "loop":
        x = rng.standard_normal((n, 16)).astype(np.float32)
        return LoopNet(), x, (x[:, :8].argmax(1) + (x[:, 8] > 0)) % 8
    if name in ("mlp", "mse", "drop"):
        model = MLPDrop() if name == "drop" else MLP()
        x = rng.standard_normal((n, 16)).astype(np.float32)
        if name == "mse":
            w = rng.standard_normal((16, 8)).astype(np.float32)
            label = np.tanh(x @ w).astype(np.float32)
        else:
            label = (x[:, :8].argmax(1) + (x[:, 8] > 0)) % 8
        return model, x, label
    if name in ("lstm", "gru"):  # lstm: 4 classes; gru: a regression target
        x = rng.standard_normal((n, 8, 8)).astype(np.float32)
        if name == "gru":
            w = rng.standard_normal((8, 4)).astype(np.float32)
            label = np.tanh(x.mean(1) @ w).astype(np.float32)
        else:
            label = x[:, :, :4].sum(1).argmax(1)
        return SeqNet(name), x, label
    if name in ("sce", "nll"):
        shape = (n, 16) if name == "sce" else (n, 3, 16)
        x = rng.standard_normal(shape).astype(np.float32)
        label = (x[..., :8].argmax(-1) + (x[..., 8] > 0)) % 8
        if name == "sce":  # about a quarter of the samples ignored
            label[rng.random(n) < 0.25] = -1
        return MLPLoss(name), x, label
    if name in ("cnn", "up"):
        model = CNN() if name == "cnn" else UpNet()
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
    ap.add_argument("model", choices=["mlp", "mse", "cnn", "gpt", "drop", "up", "sce", "nll",
                                          "lstm", "gru", "branch", "loop"])
    ap.add_argument("optimizer", choices=list(HYPER))
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--ranks", type=int, default=1)
    args = ap.parse_args()
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    batch = args.batch or {"mlp": 16, "mse": 16, "cnn": 8, "gpt": 4, "drop": 16,
                           "up": 8, "sce": 16, "nll": 4, "lstm": 8, "gru": 8, "branch": 16,
                           "loop": 16}[args.model] * args.ranks
    share = batch // args.ranks  # the per-rank batch, what model.onnx takes
    assert share * args.ranks == batch, "--batch must be a multiple of --ranks"
    model, x, label = make(args.model, batch, args.steps, rng)
    with_loss = isinstance(model, MLPLoss)  # exported with its loss: --loss none
    os.makedirs(os.path.join(args.out, "data"), exist_ok=True)
    # exported in training mode (BatchNormalization stays a node with its
    # running statistics; eval mode would fold it into the convolution);
    # the trace runs a forward pass, so the initial state is put back
    state = {k: v.clone() for k, v in model.state_dict().items()}
    model.train()
    example = (torch.from_numpy(x[:share]),)
    if with_loss:
        example += (torch.from_numpy(label[:share]),)
    # control flow (branch, loop) is exported from TorchScript: tracing
    # would record only the path this example takes
    scripted = args.model in ("branch", "loop")
    torch.onnx.export(torch.jit.script(model) if scripted else model, example,
                      os.path.join(args.out, "model.onnx"),
                      input_names=["x", "label"][:len(example)],
                      output_names=["loss" if with_loss else "y"], opset_version=14,
                      do_constant_folding=False, training=torch.onnx.TrainingMode.TRAINING)
    model.load_state_dict(state)
    # the export recorded the buffers after its forward pass (BatchNorm's
    # running statistics moved once): the initial ones go back in, or the
    # trained statistics differ from PyTorch's by 0.9^steps of that move
    import onnx
    from onnx import numpy_helper
    path = os.path.join(args.out, "model.onnx")
    exported = onnx.load(path)
    for init in exported.graph.initializer:
        if init.name in state and "running_" in init.name:
            init.CopyFrom(numpy_helper.from_array(state[init.name].numpy(), init.name))
    onnx.save(exported, path)
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
    if args.model in ACCURACY:
        _, xe, le = make(args.model, batch, 256 // batch, np.random.default_rng(1))
        np.save(os.path.join(args.out, "eval_x.npy"), xe)
        np.save(os.path.join(args.out, "eval_label.npy"), le)
    if args.model == "branch":
        # onnxc's step gives a weight of the branch not taken a zero
        # gradient, and the optimizer steps it (weight decay, AdamW's
        # moments and step count). So does PyTorch 1.13 once the weight has
        # had a gradient (zero_grad() keeps zeros), but before that its
        # gradient is None and the optimizers skip it: zero gradients from
        # the start make the two agree from step 1
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
    losses = []
    taken = [0, 0]  # branch: batches that took the then and the else branch
    for step in range(args.steps):
        xb = torch.from_numpy(x[step * batch:(step + 1) * batch])
        if args.model == "branch":
            taken[0 if float(xb.mean()) > 0 else 1] += 1
        lb = torch.from_numpy(label[step * batch:(step + 1) * batch])

        def share_loss(r):
            xs, ls = xb[r * share:(r + 1) * share], lb[r * share:(r + 1) * share]
            if args.model == "drop":  # the train program's seed is 0
                model.masks = dropout_masks(0, step * args.ranks + r, [(share, 32)] * 2,
                                            MLPDrop.RATIOS)
            y = model(xs, ls) if with_loss else model(xs)
            if with_loss:
                return y
            if args.model in ("mse", "gru"):
                return F.mse_loss(y, ls)
            return F.cross_entropy(y.reshape(-1, y.shape[-1]), ls.reshape(-1))
        opt.zero_grad()
        if args.ranks == 1:
            loss = share_loss(0)
            loss.backward()
        else:  # rank 0 last: its running statistics are the ones kept
            before = {k: v.clone() for k, v in model.named_buffers()}
            loss = 0.0
            for r in reversed(range(args.ranks)):
                part = share_loss(r) / args.ranks
                part.backward()
                loss += float(part)
                if r:
                    with torch.no_grad():
                        for k, v in model.named_buffers():
                            v.copy_(before[k])
        opt.step()
        losses.append(float(loss))
    # the running statistics PyTorch reached: the trained export's must agree
    running = {n: v.numpy() for n, v in model.state_dict().items() if "running_" in n}
    if running:
        np.savez(os.path.join(args.out, "running.npz"), **running)
    # buffers that are not BatchNorm statistics (the GPT's causal mask): ONNX
    # cannot tell them from weights, so onnxc train is told (--frozen)
    params = {n for n, _ in model.named_parameters()}
    frozen = [n for n, v in model.state_dict().items()
              if n not in params and v.is_floating_point() and "running_" not in n]
    accuracy = None
    if args.model in ACCURACY:
        model.eval()
        with torch.no_grad():
            pred = model(torch.from_numpy(xe)).argmax(-1).numpy()
        accuracy = float((pred == le).mean())
    json.dump({"model": args.model, "optimizer": args.optimizer, "batch": batch,
               "ranks": args.ranks, "rank_batch": share, "frozen": frozen, "accuracy": accuracy,
               "steps": args.steps,
               "loss": "none" if with_loss else "mse" if args.model in ("mse", "gru")
               else "cross-entropy",
               "hyper": {k: list(v) if isinstance(v, tuple) else v for k, v in hyper.items()},
               "branches": taken if args.model == "branch" else None,
               "losses": losses}, open(os.path.join(args.out, "reference.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
