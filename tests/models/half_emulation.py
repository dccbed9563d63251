#!/usr/bin/python3
"""How much error half-precision storage alone gives on the zoo models.

Usage: /usr/bin/python3 tests/models/half_emulation.py [MODEL...]

An independent estimate for `onnxc check --precision mixed`: builds each zoo
model exactly as tests/models/zoo.py does (same seeds, same inputs, the
*_trained models trained the same way), then
reruns it in torch with every parameter and every leaf module's output
rounded to FP16 (or BF16) and computed in FP32 in between - what a GPU
running the whole model in half precision with FP32 accumulation does - and
prints each output's relative L2 error against the FP32 run. It shares no
code with onnxc. Random-weight CNNs are badly conditioned: rounding only
their weights already moves ResNet-50's logits by about 1.4%, so their
mixed-precision bounds in tests/CMakeLists.txt come from these figures
(docs/precision.md).
"""

import copy
import sys

import torch

import zoo


def rel_l2(y, ref):
    return float((y - ref).norm() / ref.norm())


def build(name):
    """The zoo's model, trained as zoo.py trains it where it is trained."""
    spec = zoo.ZOO[name]
    torch.manual_seed(0)
    model = spec["build"]()
    if "task" in spec:
        zoo.fit(model, spec, name)
    return model.eval()


def emulate(name, model, dtype):
    model = copy.deepcopy(model)
    xs = [torch.from_numpy(a) for a in zoo.make_inputs(zoo.ZOO[name], seed=0)]
    with torch.no_grad():
        ref = model(*xs)

        def r(t):
            return t.to(dtype).float() if torch.is_tensor(t) and t.is_floating_point() else t

        for p in model.parameters():
            p.copy_(r(p))
        for b in model.buffers():
            if b.is_floating_point():
                b.copy_(r(b))
        for m in model.modules():
            if not list(m.children()):
                m.register_forward_hook(lambda m, i, o: r(o))
        y = model(*[r(x) for x in xs])
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    ys = y if isinstance(y, (tuple, list)) else (y,)
    return [rel_l2(a, b) for a, b in zip(ys, refs)]


def main():
    names = sys.argv[1:] or list(zoo.ZOO)
    print(f"{'model':20} {'fp16 rel l2':>12} {'bf16 rel l2':>12}")
    torch.set_num_threads(1)  # as zoo.py: the same trained weights
    for name in names:
        model = build(name)
        f16 = emulate(name, model, torch.float16)
        b16 = emulate(name, model, torch.bfloat16)
        print(f"{name:20} {max(f16):12.3g} {max(b16):12.3g}")


if __name__ == "__main__":
    main()
