#!/usr/bin/python3
"""torch_ref.py - the reference trajectory for test_rt_train's optimizer test.

    torch_ref.py DIR OPTIMIZER LR MOMENTUM WEIGHT_DECAY BETA1 BETA2 EPS

DIR holds x.npy (float32 [N, 4]), label.npy (int64 [N]), W0.npy, b0.npy (the
initial weights) and order.npy (int64 [steps, batch]: the samples of every
step, as the C trainer drew them). Trains softmax regression (logits = x @ W
+ b, mean cross-entropy) with torch.optim and writes ref_losses.npy (the loss
of every step), ref_W.npy and ref_b.npy (the final weights). Exits 77 when
torch is missing.
"""
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(77)


def main():
    d = sys.argv[1]
    kind = sys.argv[2]
    lr, mom, wd, b1, b2, eps = (float(v) for v in sys.argv[3:9])
    x = torch.from_numpy(np.load(f"{d}/x.npy"))
    y = torch.from_numpy(np.load(f"{d}/label.npy"))
    order = np.load(f"{d}/order.npy")
    W = torch.tensor(np.load(f"{d}/W0.npy"), requires_grad=True)
    b = torch.tensor(np.load(f"{d}/b0.npy"), requires_grad=True)
    if kind == "sgd":
        opt = torch.optim.SGD([W, b], lr=lr, weight_decay=wd)
    elif kind == "momentum":
        opt = torch.optim.SGD([W, b], lr=lr, momentum=mom, weight_decay=wd)
    else:
        opt = torch.optim.AdamW([W, b], lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd)
    losses = []
    for idx in order:
        idx = torch.from_numpy(idx)
        loss = F.cross_entropy(x[idx] @ W + b, y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    np.save(f"{d}/ref_losses.npy", np.array(losses, dtype=np.float64))
    np.save(f"{d}/ref_W.npy", W.detach().numpy())
    np.save(f"{d}/ref_b.npy", b.detach().numpy())


main()
