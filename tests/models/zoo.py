#!/usr/bin/python3
"""Generate onnxc's model zoo: real torch ONNX exports plus reference data.

Usage:
    /usr/bin/python3 tests/models/zoo.py OUTDIR [--only a,b] [--list] [--force]

For every model NAME this writes

    OUTDIR/NAME/model.onnx
    OUTDIR/NAME/test_data_set_0/input_K.pb     (K in graph-input order)
    OUTDIR/NAME/test_data_set_0/output_K.pb    (K in graph-output order)

i.e. the layout of the ONNX backend tests.  Each .pb is an onnx TensorProto
named after the graph input/output it belongs to.  The inputs are fixed random
data; the outputs are what torch computes for them (float32, eval mode).  One
exception: cnn_opset9's reference follows the ONNX meaning of the exported
Upsample-9 "linear" node, which differs from torch's bilinear interpolation
(see OnnxUpsampleLinear).

Parameters are random (torchvision models use weights=None), but perturbed so
no part of the math is trivial (norm affine params != 1/0, distinct weights per
transformer layer) and BatchNorm statistics are calibrated on random data so
the outputs are well scaled.

Random weights are the hard case for reduced precision, and unlike the weights
of users' models, so the *_trained models (ResNet-50, MobileNetV2, SmallCNN)
are trained instead: briefly, from scratch, on a deterministic synthetic
10-class image task at 48x48 (ImageTask), to a held-out accuracy of at least
MIN_ACCURACY (else the script fails).  Their inputs are images of that task,
not standard normal data, and they also get calibration inputs for
`onnxc check --calibrate`, drawn from the task with other seeds:

    OUTDIR/NAME/calibration/test_data_set_K/input_0.pb    (K = 0, 1)

Everything is seeded per model, so a rerun reproduces the same weights and
data.  A model whose model.onnx exists and is newer than this script is
skipped (so a build can call the script cheaply) unless --force is given.

Must be run with Debian's Python (/usr/bin/python3), which sees the system
packages torch 1.13, torchvision 0.14, onnx 1.12 and numpy.  torch 1.13 can
export up to opset 17.

Every model's export is checked with onnx.checker, its symbolic batch/seq
dimensions are verified, and its op set is checked against a list of ops the
model is meant to exercise; anything missing makes the script exit non-zero.
"""

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torchvision

SCRIPT = os.path.abspath(__file__)


# ---------------------------------------------------------------------------
# Model definitions
# ---------------------------------------------------------------------------

class MLP(nn.Module):
    """Linear(64,128)-ReLU-Linear(128,128)-GELU-Linear(128,10)."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, 128), nn.ReLU(),
            nn.Linear(128, 128), nn.GELU(),  # exact (erf) GELU
            nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)


class Bert(nn.Module):
    """BERT-style encoder: token + learned position embeddings, LayerNorm,
    2 post-norm TransformerEncoderLayers, and a tanh pooler on token 0."""

    def __init__(self, vocab=1000, d=256, max_pos=64, heads=4, ff=1024,
                 layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_pos, d)
        self.ln = nn.LayerNorm(d)
        layer = nn.TransformerEncoderLayer(
            d_model=d, nhead=heads, dim_feedforward=ff, dropout=0.0,
            batch_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(
            layer, num_layers=layers, enable_nested_tensor=False)
        self.pool = nn.Linear(d, d)

    def forward(self, input_ids):
        # Positions come from the (symbolic) sequence length, so the export
        # contains a Shape -> Gather -> Range chain.
        seq = input_ids.shape[1]
        pos = torch.arange(seq, dtype=torch.long, device=input_ids.device)
        h = self.tok(input_ids) + self.pos(pos).unsqueeze(0)
        h = self.ln(h)
        h = self.encoder(h)
        pooled = torch.tanh(self.pool(h[:, 0]))
        return h, pooled


class CausalSelfAttention(nn.Module):
    """nanoGPT-style attention: one fused qkv Linear, explicit causal mask."""

    def __init__(self, d, heads, block_size):
        super().__init__()
        self.d, self.heads = d, heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.register_buffer(
            "tril", torch.tril(torch.ones(block_size, block_size))
            .view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.qkv(x).split(self.d, dim=2)            # -> Split
        hs = C // self.heads
        q = q.view(B, T, self.heads, hs).transpose(1, 2)      # B,h,T,hs
        k = k.view(B, T, self.heads, hs).transpose(1, 2)
        v = v.view(B, T, self.heads, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        mask = self.tril[:, :, :T, :T]                        # -> Slice
        att = att.masked_fill(mask == 0, float("-inf"))       # -> Equal/Where
        att = torch.softmax(att, dim=-1)
        y = att @ v                                           # B,h,T,hs
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


def gelu_tanh(x):
    """tanh-approximated GELU written out explicitly (exports Pow/Tanh/...)."""
    return 0.5 * x * (1.0 + torch.tanh(
        math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3))))


class GPTBlock(nn.Module):
    def __init__(self, d, heads, block_size):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, block_size)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc_proj = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.fc_proj(gelu_tanh(self.fc(self.ln2(x))))
        return x


class GPT(nn.Module):
    """Hand-written nanoGPT-like causal decoder."""

    def __init__(self, vocab=512, d=128, heads=4, layers=2, block_size=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(block_size, d)
        self.blocks = nn.ModuleList(
            [GPTBlock(d, heads, block_size) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.lm_head(self.ln_f(x))


class ViT(nn.Module):
    """Tiny ViT: 8x8 conv patches on 32x32 images -> 16 tokens + class token,
    2 pre-norm TransformerEncoderLayers, LayerNorm, Linear head on class token.
    """

    def __init__(self, d=128, patch=8, img=32, heads=4, ff=256, layers=2,
                 classes=10):
        super().__init__()
        n = (img // patch) ** 2
        self.patch = nn.Conv2d(3, d, kernel_size=patch, stride=patch)
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        layer = nn.TransformerEncoderLayer(
            d_model=d, nhead=heads, dim_feedforward=ff, dropout=0.0,
            batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(
            layer, num_layers=layers, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, pixels):
        B = pixels.shape[0]
        x = self.patch(pixels).flatten(2).transpose(1, 2)   # B,16,d
        cls = self.cls.expand(B, -1, -1)                     # -> Expand
        x = torch.cat([cls, x], dim=1) + self.pos            # -> Concat
        x = self.ln(self.encoder(x))
        return self.head(x[:, 0])


class SmallCNN(nn.Module):
    """Small CNN exercising BatchNorm (not foldable), HardSigmoid gating,
    MaxPool, nearest and bilinear upsampling, Clip (ReLU6) and global pooling.
    """

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.relu = nn.ReLU()
        # BN after the ReLU, so the exporter cannot fold it into conv1.
        self.bn = nn.BatchNorm2d(16)
        self.gate = nn.Conv2d(16, 16, 1)
        self.hsig = nn.Hardsigmoid()
        self.pool = nn.MaxPool2d(2)
        self.up_nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.conv2 = nn.Conv2d(16, 16, 3, padding=1)
        self.up_bilinear = nn.Upsample(scale_factor=2, mode="bilinear",
                                       align_corners=False)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = self.bn(self.relu(self.conv1(x)))
        x = x * self.hsig(self.gate(x))
        x = self.up_nearest(self.pool(x))
        x = torch.clamp(self.conv2(x), 0.0, 6.0)
        x = self.up_bilinear(x)
        x = self.gap(x).flatten(1)
        return self.fc(x)


class OnnxUpsampleLinear(nn.Module):
    """What ONNX Upsample-9 mode="linear" computes, for reference data only.

    Before opset 11, ONNX had no coordinate_transformation_mode; onnxruntime
    (and everyone else) implement opset<=10 linear Upsample/Resize as
    "asymmetric": x_in = x_out / scale, neighbours clamped at the border.
    torch's bilinear(align_corners=False) is "half_pixel", and torch 1.13
    exports it at opset 9 as a plain Upsample(mode="linear") anyway (with a
    warning), so torch's own output is NOT what the exported graph means.
    This module reproduces the ONNX meaning with ordinary torch ops.
    """

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        for dim in range(2, x.dim()):
            n = x.shape[dim]
            m = int(n * self.scale)
            src = torch.arange(m, dtype=torch.float32) / self.scale
            i0 = src.floor().long().clamp(max=n - 1)
            i1 = (i0 + 1).clamp(max=n - 1)
            w = (src - i0.float()).view([m if d == dim else 1
                                         for d in range(x.dim())])
            x = x.index_select(dim, i0) * (1 - w) + x.index_select(dim, i1) * w
        return x


def perturb_parameters(model):
    """Make every parameter "interesting", so no part of the math is a no-op.

    torch's default init leaves several things degenerate for testing:
      * LayerNorm / BatchNorm affine params are exactly 1 and 0;
      * MultiheadAttention's in/out projection biases are exactly 0;
      * nn.TransformerEncoder deep-copies ONE layer, so all its layers have
        identical weights (the exporter then dedups them into Identity nodes).
    Uses the global torch RNG, which the caller has seeded.
    """
    for m in model.modules():
        if isinstance(m, nn.TransformerEncoderLayer):
            # Independent weights per layer instead of N identical clones.
            m.self_attn._reset_parameters()  # in_proj only
            m.self_attn.out_proj.reset_parameters()
            m.linear1.reset_parameters()
            m.linear2.reset_parameters()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.LayerNorm, nn.modules.batchnorm._BatchNorm)):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.5, 0.5)
            elif isinstance(m, nn.MultiheadAttention):
                m.in_proj_bias.uniform_(-0.1, 0.1)
                m.out_proj.bias.uniform_(-0.1, 0.1)


def calibrate_batchnorm(model, shape, steps=3):
    """Give BatchNorm layers real running statistics.

    Random-init BN is an identity in eval mode (mean 0, var 1).  Without
    calibration, randomly initialised deep nets are badly scaled (random
    resnet50 logits reach ~100, random mobilenet_v2 logits are ~1e-9, i.e.
    useless as reference data).  A few seeded train-mode forward passes on
    random data (cumulative average, momentum=None) fix that.
    """
    bns = [m for m in model.modules()
           if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(steps):
            model(torch.randn(*shape))
    for m in bns:
        m.momentum = 0.1  # restore the default (it is exported as an attr)
    model.eval()


def prepared(build, calib_shape=None):
    """Build function wrapper: construct, perturb, calibrate BN, eval()."""
    def make():
        model = build()
        perturb_parameters(model)
        if calib_shape is not None:
            calibrate_batchnorm(model, calib_shape)
        return model.eval()
    return make


# ---------------------------------------------------------------------------
# Trained models: a synthetic image-classification task
# ---------------------------------------------------------------------------

TRAIN_SEED = 1000      # torch (dropout) and numpy (batches) while training
HELDOUT_SEED = 1001    # the held-out images the accuracy is measured on
MIN_ACCURACY = 0.8     # below this held-out accuracy, training failed


class ImageTask:
    """Deterministic synthetic image classification, RGB size x size.

    Class c has a fixed smooth template: the sum of three coloured gratings
    (integer frequencies of at most 3 cycles per image, so it tiles
    seamlessly), at zero mean and unit variance.  An image of class c is that
    template circularly shifted by a random offset, times a random contrast
    in [0.5, 1.5], plus a random brightness per channel (sd 0.2) and white
    noise (sd 0.5), scaled to unit variance overall.  The templates depend
    only on `seed`, the images only on the rng passed to sample().
    """

    NOISE = 0.5
    BRIGHTNESS = 0.2

    def __init__(self, size, classes=10, seed=7):
        self.size, self.classes = size, classes
        rng = np.random.RandomState(seed)
        y, x = np.mgrid[0:size, 0:size] / size
        self.templates = np.zeros((classes, 3, size, size))
        for t in self.templates:
            for _ in range(3):
                kx, ky = rng.randint(1, 4), rng.randint(-3, 4)
                phase = rng.uniform(0, 2 * np.pi)
                colour = rng.standard_normal((3, 1, 1))
                t += colour * np.cos(2 * np.pi * (kx * x + ky * y) + phase)
            t -= t.mean()
            t /= t.std()
        # E[contrast^2] = 13/12 for contrast ~ U(0.5, 1.5)
        self.scale = 1 / math.sqrt(13 / 12 + self.BRIGHTNESS ** 2
                                   + self.NOISE ** 2)

    def sample(self, rng, n):
        """n images (float32 n,3,size,size) and their labels (int64 n)."""
        labels = rng.randint(0, self.classes, size=n)
        shifts = rng.randint(0, self.size, size=(n, 2))
        contrast = rng.uniform(0.5, 1.5, size=(n, 1, 1, 1))
        brightness = self.BRIGHTNESS * rng.standard_normal((n, 3, 1, 1))
        images = np.stack([np.roll(self.templates[c], tuple(s), axis=(1, 2))
                           for c, s in zip(labels, shifts)])
        images = (contrast * images + brightness
                  + self.NOISE * rng.standard_normal(images.shape))
        return (self.scale * images).astype(np.float32), labels


def train(model, task, steps, batch=16, lr=0.02, warmup=30):
    """Train `model` on `task` from scratch, BatchNorm in train mode.

    SGD with Nesterov momentum 0.9 and weight decay 5e-4; the learning rate
    rises linearly over `warmup` steps and decays along a cosine.  Seeds its
    own RNGs, so the result does not depend on what ran before.
    """
    torch.manual_seed(TRAIN_SEED)
    rng = np.random.RandomState(TRAIN_SEED)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9,
                          nesterov=True, weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda i: (min(1.0, (i + 1) / warmup)
                        * 0.5 * (1 + math.cos(math.pi * i / steps))))
    model.train()
    for _ in range(steps):
        x, y = task.sample(rng, batch)
        loss = nn.functional.cross_entropy(model(torch.from_numpy(x)),
                                           torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    model.eval()


def heldout_accuracy(model, task, batches=10, batch=32):
    """Eval-mode accuracy on batches x batch fresh images of the task."""
    rng = np.random.RandomState(HELDOUT_SEED)
    correct = 0
    with torch.no_grad():
        for _ in range(batches):
            x, y = task.sample(rng, batch)
            pred = model(torch.from_numpy(x)).argmax(1).numpy()
            correct += int((pred == y).sum())
    return correct / (batches * batch)


def fit(model, spec, name):
    """Train a zoo entry's model on its task; returns a note for the log."""
    train(model, spec["task"], spec["steps"])
    acc = heldout_accuracy(model, spec["task"])
    if acc < MIN_ACCURACY:
        raise ZooError(f"{name}: held-out accuracy {acc:.1%} after "
                       f"{spec['steps']} steps, below {MIN_ACCURACY:.0%}")
    return f" (trained {spec['steps']} steps, held-out accuracy {acc:.1%})"


# ---------------------------------------------------------------------------
# Zoo table
# ---------------------------------------------------------------------------
#
# Each entry:
#   build()    -> nn.Module (called after torch.manual_seed(0))
#   inputs     -> list of (name, kind, concrete shape, symbolic dims {axis: name})
#                 kind is "f32" (standard normal), ("int64", high) or "task"
#                 (images of the entry's task)
#   outputs    -> list of (name, symbolic dims)
#   opset      -> ONNX opset to export at
#   require    -> op types that must appear in the exported graph
#   forbid     -> op types that must NOT appear
#   reference  -> optional fn(model) -> model used (after export) to compute
#                 the reference outputs, where torch's own math differs from
#                 what the exported ONNX graph means (see OnnxUpsampleLinear)
#   task, steps -> optional ImageTask: the model is trained on it for `steps`
#                 steps before export (see fit), and gets calibration inputs

B = {0: "batch"}
BS = {0: "batch", 1: "seq"}


def _onnx9_reference(model):
    """cnn_opset9 reference: use ONNX Upsample-9 "linear" semantics."""
    model.up_bilinear = OnnxUpsampleLinear(2)
    return model


CNN_COMMON = dict(
    build=prepared(SmallCNN, calib_shape=(8, 3, 32, 32)),
    inputs=[("x", "f32", (2, 3, 32, 32), B)],
    outputs=[("logits", B)],
)

TASK = ImageTask(size=48)

TRAINED_COMMON = dict(
    task=TASK,
    inputs=[("input", "task", (2, 3, TASK.size, TASK.size), B)],
    outputs=[("logits", B)],
)

ZOO = {
    "mlp": dict(
        build=prepared(MLP),
        inputs=[("x", "f32", (4, 64), B)],
        outputs=[("y", B)],
        opset=17,
        require={"Gemm", "Relu", "Erf"},
    ),
    "resnet50": dict(
        build=prepared(lambda: torchvision.models.resnet50(weights=None),
                       calib_shape=(4, 3, 112, 112)),
        inputs=[("input", "f32", (1, 3, 224, 224), B)],
        outputs=[("logits", B)],
        opset=17,
        require={"Conv", "Relu", "MaxPool", "Add", "GlobalAveragePool",
                 "Flatten", "Gemm"},
        forbid={"BatchNormalization"},  # folded into Conv by eval export
    ),
    "mobilenetv2": dict(
        build=prepared(lambda: torchvision.models.mobilenet_v2(weights=None),
                       calib_shape=(4, 3, 112, 112)),
        inputs=[("input", "f32", (1, 3, 224, 224), B)],
        outputs=[("logits", B)],
        opset=17,
        require={"Conv", "Clip", "Add", "GlobalAveragePool", "Gemm"},
        forbid={"BatchNormalization"},
    ),
    "bert": dict(
        build=prepared(Bert),
        inputs=[("input_ids", ("int64", 1000), (2, 16), BS)],
        outputs=[("last_hidden_state", BS), ("pooled", B)],
        opset=17,
        require={"Gather", "Shape", "Range", "LayerNormalization", "MatMul",
                 "Softmax", "Erf", "Tanh", "Gemm"},
    ),
    "gpt": dict(
        build=prepared(GPT),
        inputs=[("idx", ("int64", 512), (2, 32), BS)],
        outputs=[("logits", BS)],
        opset=17,
        require={"Gather", "Shape", "Range", "LayerNormalization", "Split",
                 "Transpose", "MatMul", "Slice", "Equal", "Where", "Softmax",
                 "Tanh", "Pow"},
    ),
    "vit": dict(
        build=prepared(ViT),
        inputs=[("pixels", "f32", (2, 3, 32, 32), B)],
        outputs=[("logits", B)],
        opset=17,
        require={"Conv", "Reshape", "Transpose", "Expand", "Concat",
                 "LayerNormalization", "MatMul", "Softmax", "Relu", "Gemm"},
    ),
    "cnn_opset9": dict(
        **CNN_COMMON,
        opset=9,
        require={"Conv", "Relu", "BatchNormalization", "HardSigmoid",
                 "MaxPool", "Upsample", "Clip", "GlobalAveragePool", "Gemm"},
        forbid={"Resize"},
        reference=_onnx9_reference,
    ),
    "cnn_opset11": dict(
        **CNN_COMMON,
        opset=11,
        require={"Conv", "Relu", "BatchNormalization", "HardSigmoid",
                 "MaxPool", "Resize", "Clip", "GlobalAveragePool", "Gemm"},
        forbid={"Upsample"},
    ),
    "resnet50_trained": dict(
        **TRAINED_COMMON,
        # Zero-init residual branches (Goyal et al.): without it, resnet50
        # does not train stably from scratch at batch 16 in a few steps.
        build=lambda: torchvision.models.resnet50(
            weights=None, num_classes=10, zero_init_residual=True),
        steps=120,
        opset=17,
        require={"Conv", "Relu", "MaxPool", "Add", "GlobalAveragePool",
                 "Flatten", "Gemm"},
        forbid={"BatchNormalization"},
    ),
    "mobilenetv2_trained": dict(
        **TRAINED_COMMON,
        build=lambda: torchvision.models.mobilenet_v2(
            weights=None, num_classes=10),
        steps=250,
        opset=17,
        require={"Conv", "Clip", "Add", "GlobalAveragePool", "Gemm"},
        forbid={"BatchNormalization"},
    ),
    "cnn_trained": dict(
        **TRAINED_COMMON,
        build=SmallCNN,
        steps=250,
        opset=11,
        require={"Conv", "Relu", "BatchNormalization", "HardSigmoid",
                 "MaxPool", "Resize", "Clip", "GlobalAveragePool", "Gemm"},
        forbid={"Upsample"},
    ),
}


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------

class ZooError(Exception):
    pass


def make_inputs(spec, seed):
    """Fixed random inputs for a model, from a per-model numpy seed."""
    rng = np.random.RandomState(seed)
    arrays = []
    for name, kind, shape, _ in spec["inputs"]:
        if kind == "f32":
            arrays.append(rng.standard_normal(shape).astype(np.float32))
        elif kind == "task":
            images, _ = spec["task"].sample(rng, shape[0])
            arrays.append(images)
        else:
            dtype, high = kind
            arrays.append(rng.randint(0, high, size=shape).astype(np.int64))
    return arrays


def check_dims(model, spec, name):
    """Verify the exported graph's I/O names and symbolic dimensions."""
    g = model.graph
    want_in = [i[0] for i in spec["inputs"]]
    want_out = [o[0] for o in spec["outputs"]]
    got_in = [i.name for i in g.input]
    got_out = [o.name for o in g.output]
    if got_in != want_in or got_out != want_out:
        raise ZooError(f"{name}: graph I/O {got_in}->{got_out}, "
                       f"expected {want_in}->{want_out}")
    pairs = [(v, s[3]) for v, s in zip(g.input, spec["inputs"])]
    pairs += [(v, s[1]) for v, s in zip(g.output, spec["outputs"])]
    for vi, sym in pairs:
        dims = vi.type.tensor_type.shape.dim
        for axis, param in sym.items():
            if dims[axis].dim_param != param:
                raise ZooError(f"{name}: {vi.name} axis {axis} is "
                               f"{dims[axis]!r}, expected dim_param {param!r}")


CALIBRATION_SETS = 2


def calibration_dirs(outdir, spec):
    """Where a trained model's calibration inputs go (none for the others)."""
    if "task" not in spec:
        return []
    return [os.path.join(outdir, "calibration", f"test_data_set_{k}")
            for k in range(CALIBRATION_SETS)]


def up_to_date(outdir, spec):
    """model.onnx exists, is newer than this script, and the data is there."""
    model = os.path.join(outdir, "model.onnx")
    data = os.path.join(outdir, "test_data_set_0")
    return (os.path.isfile(model)
            and os.path.getmtime(model) > os.path.getmtime(SCRIPT)
            and os.path.isdir(data)
            and any(f.startswith("output_") for f in os.listdir(data))
            and all(os.path.isfile(os.path.join(d, "input_0.pb"))
                    for d in calibration_dirs(outdir, spec)))


def reference_outputs(model, tensors):
    """torch's float32 eval-mode outputs, as numpy arrays.

    Deliberately run *with* autograd enabled: under no_grad, eval-mode
    nn.TransformerEncoderLayer switches to a fused "fast path" kernel, while
    the exporter traces the plain composite path; running the traced path
    keeps the reference closest to the exported graph's arithmetic.
    """
    outs = model(*tensors)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    return [o.detach().float().numpy() for o in outs]


def export(model, tensors, spec, path):
    """torch.onnx.export with named I/O and symbolic batch (and seq) dims.

    Must not run under torch.no_grad: that breaks exporting
    nn.TransformerEncoder in torch 1.13.
    """
    dyn = {i[0]: i[3] for i in spec["inputs"]}
    dyn.update({o[0]: o[1] for o in spec["outputs"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tracer / Upsample-9 chatter
        torch.onnx.export(
            model, tensors, path,
            opset_version=spec["opset"],
            input_names=[i[0] for i in spec["inputs"]],
            output_names=[o[0] for o in spec["outputs"]],
            dynamic_axes=dyn,
            do_constant_folding=True,
        )


def validate(path, spec, name):
    """checker + I/O names/dims + required/forbidden ops; returns the model."""
    onnx.checker.check_model(path)  # path form: fine for large models too
    m = onnx.load(path)
    check_dims(m, spec, name)
    ops = {n.op_type for n in m.graph.node}
    missing = sorted(spec.get("require", set()) - ops)
    present = sorted(spec.get("forbid", set()) & ops)
    if missing:
        raise ZooError(f"{name}: required ops missing: {missing}")
    if present:
        raise ZooError(f"{name}: unexpected ops present: {present}")
    return m


def write_test_data(datadir, m, inputs, outputs):
    """input_K.pb / output_K.pb, each named after its graph input/output."""
    for old in os.listdir(datadir):
        os.remove(os.path.join(datadir, old))
    for prefix, vis, arrays in (("input", m.graph.input, inputs),
                                ("output", m.graph.output, outputs)):
        for k, (vi, arr) in enumerate(zip(vis, arrays)):
            t = onnx.numpy_helper.from_array(arr, vi.name)
            with open(os.path.join(datadir, f"{prefix}_{k}.pb"), "wb") as f:
                f.write(t.SerializeToString())


def write_calibration(outdir, m, spec):
    """Calibration inputs: like test_data_set_0's, but seeds 1, 2, ..."""
    for seed, d in enumerate(calibration_dirs(outdir, spec), start=1):
        os.makedirs(d, exist_ok=True)
        write_test_data(d, m, make_inputs(spec, seed), [])


def generate(name, spec, root):
    """Build, export, check and write reference data for one model.

    Returns (opset, node count, sorted op types, note)."""
    outdir = os.path.join(root, name)
    datadir = os.path.join(outdir, "test_data_set_0")
    os.makedirs(datadir, exist_ok=True)

    # Deterministic weights: reseed the global torch RNG before building.
    torch.manual_seed(0)
    model = spec["build"]()
    note = fit(model, spec, name) if "task" in spec else ""
    model.eval()
    inputs = make_inputs(spec, seed=0)
    tensors = tuple(torch.from_numpy(a) for a in inputs)

    # Export to a temporary name, renamed only once everything succeeded, so
    # a failed or interrupted run never leaves a model.onnx that looks up to
    # date.
    path = os.path.join(outdir, "model.onnx")
    tmp = path + ".tmp"
    try:
        export(model, tensors, spec, tmp)
        m = validate(tmp, spec, name)

        # Reference outputs, computed after the export because a reference
        # hook may modify the model.
        outs = reference_outputs(model, tensors)
        if "reference" in spec:
            torch_outs = outs
            outs = reference_outputs(spec["reference"](model), tensors)
            diff = max(float(np.abs(a - b).max())
                       for a, b in zip(outs, torch_outs))
            note += (f" (reference uses ONNX semantics; "
                     f"torch's own output differs by {diff:.2g})")

        write_test_data(datadir, m, inputs, outs)
        write_calibration(outdir, m, spec)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):  # only left behind when something failed
            os.remove(tmp)

    opset = next(o.version for o in m.opset_import
                 if o.domain in ("", "ai.onnx"))
    ops = sorted({n.op_type for n in m.graph.node})
    return opset, len(m.graph.node), ops, note


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?", help="output directory")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help="list models and exit")
    ap.add_argument("--force", action="store_true",
                    help="regenerate even if up to date")
    args = ap.parse_args(argv)

    if args.list:
        print("\n".join(ZOO))
        return 0
    if not args.outdir:
        ap.error("OUTDIR is required")

    names = list(ZOO)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        unknown = [n for n in names if n not in ZOO]
        if unknown:
            ap.error(f"unknown model(s): {', '.join(unknown)}")

    # One intra-op thread: the reference outputs (and the BN statistics that
    # get folded into resnet50/mobilenetv2 weights) then no longer depend on
    # the machine's core count.  It costs nothing here: these models are tiny
    # and most of the time goes into the exporter.
    torch.set_num_threads(1)

    failures = 0
    t_all = time.time()
    for name in names:
        outdir = os.path.join(args.outdir, name)
        if not args.force and up_to_date(outdir, ZOO[name]):
            print(f"{name}: up to date, skipped")
            continue
        t0 = time.time()
        try:
            opset, nnodes, ops, note = generate(name, ZOO[name], args.outdir)
        except Exception as e:  # report and keep going; exit non-zero below
            failures += 1
            print(f"{name}: FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        print(f"{name}: opset {opset}, {nnodes} nodes, "
              f"ops [{' '.join(ops)}], {time.time() - t0:.2f}s{note}",
              flush=True)
    print(f"total {time.time() - t_all:.2f}s"
          + (f", {failures} FAILED" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
