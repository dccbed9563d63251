#!/usr/bin/python3
"""make_init.py - data and initial weights for fake_train (program.sh).

    make_init.py DIR

Writes DIR/data/input_x_0.npy, DIR/data/label.npy and DIR/fake.init. The
.init file is written from docs/training.md's description of the checkpoint
format, independently of runtime/rt_train_ckpt.c, so the test also checks
that the document is exact.
"""
import struct
import sys

import numpy as np

MODEL_ID = 0x1234ABCD5678EF00


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def pad8(b):
    return b + b"\0" * (-len(b) % 8)


def tensors(items):
    out = struct.pack("<II", len(items), 0)
    for name, arr in items:
        arr = np.ascontiguousarray(arr, dtype="<f4")
        nm = name.encode()
        head = struct.pack("<IIQ", len(nm), arr.ndim, arr.size)
        head += b"".join(struct.pack("<Q", d) for d in arr.shape)
        out += pad8(head + nm) + pad8(arr.tobytes())
    return out


def section(tag, payload):
    return tag + struct.pack("<IQ", 0, len(payload)) + pad8(payload)


def main():
    d = sys.argv[1]
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, (37, 4)).astype(np.float32)
    y = (x @ rng.normal(size=(4, 3))).argmax(1).astype(np.int64)
    np.save(f"{d}/data/input_x_0.npy", x)
    np.save(f"{d}/data/label.npy", y.astype(np.int32))  # converted on load
    meta = struct.pack("<15Q", *([0] * 15)) + struct.pack("<10d", *([0.0] * 10))
    meta += struct.pack("<II", 0, 0)  # optimizer none, loss scaling off
    assert len(meta) == 208
    body = section(b"META", meta)
    body += section(b"PARM", tensors([("W", rng.normal(0, 0.3, (4, 3))),
                                      ("b", np.zeros(3))]))
    body += section(b"STAT", tensors([("running_mean", np.zeros(4))]))
    size = 64 + len(body) + 8
    head = b"ONNXCKPT" + struct.pack("<IIQQI", 1, 64, MODEL_ID, size, 3)
    head += b"\0" * (64 - len(head))
    data = head + body
    with open(f"{d}/fake.init", "wb") as f:
        f.write(data + struct.pack("<Q", fnv1a64(data)))


main()
