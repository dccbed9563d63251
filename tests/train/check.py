"""onnxc's training program against PyTorch on the same model, initial
weights, data order and hyper-parameters.

    check.py --onnxc ONNXC MODEL OPTIMIZER [--precision mixed] [--steps N]
             [--rtol R] [--resume-at K] [--ranks R] [--keep DIR]

MODEL is one of tests/train/models.py's (mlp, mse, cnn, gpt, drop, up, sce,
nll, lstm, gru, branch, loop). PyTorch 1.13
trains the model (train() mode, batches in file order) and exports it at
initialisation; `onnxc train` compiles that export with the same loss and
hyper-parameters; OUTDIR/train runs the same batches (--shuffle off). Every
step's loss must agree with PyTorch's within RTOL relative (FP32 default
1e-4). With --precision mixed the step runs in half precision where the
cost model says so and the bound is the mixed-precision one (default
2e-2): the curve tracks the FP32 one. Prints the largest deviation.

With --ranks R (R > 1) the program runs data-parallel under Open MPI's
`mpirun -np R`, compiled for the per-rank batch, against PyTorch's run of
the global batch as DistributedDataParallel computes it (models.py
--ranks); it must say that its weights are identical on every rank. Then
also: with --resume-at, a run of the R ranks stopped and resumed gives the
same losses, and its checkpoint resumes in one process at the same sample
(the step's loss PyTorch computes with the checkpoint's weights on that
batch); and a rank killed mid-run ends the run, not a hang.
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"


def launcher(ranks):
    """The command that starts ranks processes (none for one)."""
    if ranks == 1:
        return []
    # in the sanitizer build, no leak report: Open MPI keeps what its
    # plugins allocate past MPI_Finalize, and unloads the plugins, so no
    # suppression can name them (the one-process runs check the trainer)
    asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "detect_leaks=0"]))
    return ["mpirun", "--allow-run-as-root", "--oversubscribe", "-x", "ASAN_OPTIONS=" + asan,
            "-np", str(ranks)]


def torch_model(args, ref, exported):
    """(the PyTorch model with the weights of onnxc's export, its inputs x,
    the export's initializers {name: array}) or Nones after a FAIL line."""
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    sys.path.insert(0, HERE)
    import models
    torch.manual_seed(0)
    model, x, _ = models.make(args.model, ref["batch"], args.steps, np.random.default_rng(0))
    weights = {t.name: numpy_helper.to_array(t) for t in onnx.load(exported).graph.initializer}
    state = model.state_dict()
    missing = [n for n in state if n not in weights and state[n].is_floating_point()]
    if missing:
        print("FAIL: the exported model lacks %s" % ", ".join(missing))
        return None, None, None
    for n in state:
        if n in weights:
            state[n] = torch.from_numpy(weights[n].copy())
    model.load_state_dict(state)
    return model, x, weights


def check_trained(args, work, ref, trained):
    """The exported model: its running statistics are PyTorch's, its
    weights in PyTorch reach PyTorch's own held-out accuracy, and ONNX
    Runtime runs it to the same outputs."""
    import numpy as np
    import torch
    model, x, weights = torch_model(args, ref, trained)
    if model is None:
        return 1
    status = 0
    if os.path.exists(os.path.join(work, "running.npz")):
        # BatchNorm's running statistics, which only the held-out accuracy
        # and the export read (in a branch of an If: moved only when it
        # ran). Not the means after AdamW: the bias before a BatchNorm has a
        # gradient of zero up to rounding, which AdamW's normalized step
        # turns into a drift of about lr a step, different in each run
        running = np.load(os.path.join(work, "running.npz"))
        names = [n for n in running.files
                 if args.optimizer != "adamw" or "running_mean" not in n]
        err = max(float(np.abs(weights[n] - running[n]).max() / (np.abs(running[n]).max() + 1e-30))
                  for n in names)
        bound = 1e-4 if args.precision == "fp32" else 2e-2
        print("running statistics (%d) vs PyTorch's: max relative error %.2e%s"
              % (len(names), err, "" if err <= bound else "  FAIL"))
        status |= err > bound
    if ref["accuracy"] is not None:
        xe = np.load(os.path.join(work, "eval_x.npy"))
        le = np.load(os.path.join(work, "eval_label.npy"))
        model.eval()
        with torch.no_grad():
            acc = float((model(torch.from_numpy(xe)).argmax(-1).numpy() == le).mean())
        ok = abs(acc - ref["accuracy"]) <= 2.0 / len(le)
        print("held-out accuracy: onnxc-trained %.4f, PyTorch-trained %.4f (%d samples)%s"
              % (acc, ref["accuracy"], len(le), "" if ok else "  FAIL"))
        status |= not ok
    # onnxc and ONNX Runtime on the exported model, one batch, against
    # PyTorch with the same weights in eval() mode: the export is for
    # inference (BatchNormalization on the trained running statistics, no
    # Dropout), so onnxc compiles it as it is
    # (a model exported with its loss computes the loss of a batch)
    rank_batch = ref["rank_batch"]  # what the program (and its export) takes
    batch = {"x": x[:rank_batch]}
    if ref["loss"] == "none":
        batch["label"] = np.load(os.path.join(work, "data", "label.npy"))[:rank_batch]
    feeds = []
    for name, value in batch.items():
        np.save(os.path.join(work, "export_%s.npy" % name), value)
        feeds += ["--input", "%s=%s" % (name, os.path.join(work, "export_%s.npy" % name))]
    model.eval()
    with torch.no_grad():
        y = model(*[torch.from_numpy(v) for v in batch.values()]).numpy()

    def compare(who, cmd, out):
        subprocess.run(cmd + [trained] + feeds + ["--output-dir", os.path.dirname(out)],
                       check=True, stdout=subprocess.DEVNULL)
        err = float(np.abs(np.load(out) - y).max() / (np.abs(y).max() + 1e-30))
        print("%s on the exported model vs PyTorch eval() with its weights: max relative "
              "error %.2e%s" % (who, err, "" if err <= 1e-4 else "  FAIL"))
        return err > 1e-4

    status |= compare("onnxc run", [args.onnxc, "run", "--repeat", "1", "--cache-dir",
                                    os.path.join(work, "cache")],
                      os.path.join(work, "run", "loss.npy" if ref["loss"] == "none"
                                   else "y.npy"))
    ort_run = os.path.join(HERE, "..", "..", "scripts", "ort_run.js")
    node = shutil.which("node")
    if node and subprocess.run([node, ort_run, "--check"], capture_output=True).returncode == 0:
        status |= compare("ONNX Runtime", [node, ort_run],
                          os.path.join(work, "ort", "output_0.npy"))
    else:
        print("ONNX Runtime not installed (scripts/ort_run.js --check): export not run")
    return status


def check_other_count(args, work, ref):
    """A checkpoint of R ranks resumed in one process: it goes on at the
    same sample of the epoch (its global batch is now one rank's), and the
    loss of that step is the one PyTorch computes with the checkpoint's
    weights on those samples."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    k, rb = args.resume_at, ref["rank_batch"]
    ck, log, w = (os.path.join(work, f) for f in ("ck_other", "other.csv", "other.onnx"))
    train = [os.path.join(work, "out", "train"), "--data", os.path.join(work, "data"),
             "--shuffle", "off", "--checkpoint", ck]
    subprocess.run(launcher(args.ranks) + train + ["--steps", str(k)], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(train + ["--resume", "--steps", str(k), "--export-onnx", w], check=True,
                   stdout=subprocess.DEVNULL)
    p = subprocess.run(train + ["--resume", "--steps", str(k + 1), "--log", log],
                       capture_output=True, text=True)
    if p.returncode:
        print("FAIL: the %d ranks' checkpoint does not resume in one process: %s"
              % (args.ranks, p.stderr.strip()))
        return 1
    got = float(list(csv.DictReader(open(log)))[-1]["loss"])
    model, x, _ = torch_model(args, ref, w)
    if model is None:
        return 1
    if args.model == "drop":  # one process: the masks of the seed's entry k
        import models
        model.masks = models.dropout_masks(0, k, [(rb, 32)] * 2, models.MLPDrop.RATIOS)
    at = k * ref["batch"]  # the samples the R ranks took
    label = np.load(os.path.join(work, "data", "label.npy"))
    xb, lb = torch.from_numpy(x[at:at + rb]), torch.from_numpy(label[at:at + rb])
    model.train()
    with torch.no_grad():
        y = model(xb, lb) if ref["loss"] == "none" else model(xb)
        want = float(y if ref["loss"] == "none" else F.mse_loss(y, lb) if ref["loss"] == "mse"
                     else F.cross_entropy(y.reshape(-1, y.shape[-1]), lb.reshape(-1)))
    err = abs(got - want) / max(abs(want), 1e-12)
    rtol = args.rtol or (1e-4 if args.precision == "fp32" else 2e-2)
    print("checkpoint of %d ranks at step %d resumed in one process at sample %d: loss %.6f, "
          "PyTorch %.6f (relative error %.1e)%s" % (args.ranks, k, at, got, want, err,
                                                    "" if err <= rtol else "  FAIL"))
    return 0 if err <= rtol else 1


def check_nonfinite_rank(args, work, ref):
    """An inf in one sample of the last rank's share of step 4, with loss
    scaling on: every rank skips step 4 (the test runs on the summed
    gradients), the scale backs off once for all, and the weights stay
    identical."""
    import numpy as np
    data = os.path.join(work, "inf_data")
    shutil.copytree(os.path.join(work, "data"), data)
    x = np.load(os.path.join(data, "x.npy"))
    if x.dtype.kind != "f":
        return 0  # token ids (the GPT): no inf to put in
    x.reshape(len(x), -1)[3 * ref["batch"] + (args.ranks - 1) * ref["rank_batch"], 0] = np.inf
    np.save(os.path.join(data, "x.npy"), x)
    log = os.path.join(work, "inf.csv")
    p = subprocess.run(launcher(args.ranks) + [
        os.path.join(work, "out", "train"), "--data", data, "--steps", "8", "--shuffle", "off",
        "--loss-scale", "on", "--log", log], capture_output=True, text=True)
    rows = list(csv.DictReader(open(log))) if os.path.exists(log) else []
    skipped = [int(r["step"]) for r in rows if r["skipped"] == "1"]
    scales = [float(r["loss_scale"]) for r in rows]
    ok = (p.returncode == 0 and skipped == [4] and len(scales) == 8 and
          scales[4] == scales[3] / 2 and "weights identical on every rank" in p.stdout)
    print("inf in rank %d's share of step 4: steps skipped %s, loss scale %s%s"
          % (args.ranks - 1, skipped, " -> ".join("%g" % s for s in scales[2:6]),
             "" if ok else "  FAIL\n" + p.stdout + p.stderr))
    return 0 if ok else 1


def check_killed_rank(args, work):
    """A rank killed mid-run (SIGKILL) ends every rank within a minute."""
    import signal
    import time
    log = os.path.join(work, "killed.csv")
    p = subprocess.Popen(launcher(args.ranks) + [
        os.path.join(work, "out", "train"), "--data", os.path.join(work, "data"),
        "--epochs", "1000000", "--log", log], stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and p.poll() is None:  # training has started
            if os.path.exists(log) and len(open(log).read().splitlines()) > 3:
                break
            time.sleep(0.1)
        ranks = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True,
                               text=True).stdout.split()
        if p.poll() is not None or len(ranks) != args.ranks:
            print("FAIL: the run to kill a rank of: status %s, %d ranks found"
                  % (p.poll(), len(ranks)))
            return 1
        os.kill(int(ranks[-1]), signal.SIGKILL)
        start = time.time()
        try:
            rc = p.wait(60)
        except subprocess.TimeoutExpired:
            print("FAIL: the other ranks still run 60 s after one was killed")
            return 1
        print("rank killed mid-run: every rank ended after %.1f s, status %d%s"
              % (time.time() - start, rc, "" if rc else "  FAIL"))
        return 0 if rc else 1
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def check_bad_label(work):
    """A model exported with its loss (ignore_index -1 or -100, 8 classes):
    a label outside [0, 8) that is not the ignored value is refused before
    any step, as PyTorch raises."""
    import numpy as np
    bad = os.path.join(work, "badlabel")
    shutil.copytree(os.path.join(work, "data"), bad)
    label = np.load(os.path.join(bad, "label.npy"))
    label.reshape(len(label), -1)[3, 0] = 8
    np.save(os.path.join(bad, "label.npy"), label)
    p = subprocess.run([os.path.join(work, "out", "train"), "--data", bad, "--steps", "1"],
                       capture_output=True, text=True)
    want = "sample 3%s: class label 8 is not in [0, 8) nor the ignored " % (
        ", element 0" if label.ndim > 1 else "")
    ok = p.returncode != 0 and want in p.stderr
    print("label 8 of 8 classes: %s" % ("refused" if ok else "not refused  FAIL\n" + p.stderr))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("model")
    ap.add_argument("optimizer")
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--amp-policy", default="cost",
                    help="with --precision mixed; greedy paints every allow-list op half "
                         "(the cost model keeps these small models in FP32)")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rtol", type=float, default=0)
    ap.add_argument("--resume-at", type=int, default=0,
                    help="also stop a run after this many steps, resume it from its "
                         "checkpoint and demand the uninterrupted run's losses exactly")
    ap.add_argument("--ranks", type=int, default=1,
                    help="run data-parallel on this many MPI ranks")
    ap.add_argument("--keep")
    args = ap.parse_args()
    rtol = args.rtol or (1e-4 if args.precision == "fp32" else 2e-2)
    work = args.keep or tempfile.mkdtemp(prefix="onnxc-train-")
    os.makedirs(work, exist_ok=True)
    try:
        subprocess.run([PY, os.path.join(HERE, "models.py"), work, args.model, args.optimizer,
                        "--steps", str(args.steps), "--ranks", str(args.ranks)], check=True,
                       stderr=subprocess.DEVNULL)
        ref = json.load(open(os.path.join(work, "reference.json")))
        h = ref["hyper"]
        cmd = [args.onnxc, "train", os.path.join(work, "model.onnx"), "-o",
               os.path.join(work, "out"), "--name", "net", "-q", "--loss", ref["loss"],
               "--optimizer", args.optimizer, "--lr", repr(h["lr"]),
               "--weight-decay", repr(h["weight_decay"]), "--precision", args.precision]
        if ref["frozen"]:
            cmd += ["--frozen", ",".join(ref["frozen"])]
        if "momentum" in h and args.optimizer == "momentum":
            cmd += ["--momentum", repr(h["momentum"])]
        if args.optimizer == "adamw":
            cmd += ["--betas", "%r,%r" % tuple(h["betas"]), "--eps", repr(h["eps"])]
        if args.precision == "mixed":
            # the comparison is about the precision, not the loss scale:
            # on a well-scaled model the scale must never have to back off
            cmd += ["--loss-scale", "on", "--amp-policy", args.amp_policy]
        subprocess.run(cmd, check=True)
        log = os.path.join(work, "log.csv")
        trained = os.path.join(work, "trained.onnx")
        p = subprocess.run(launcher(args.ranks) + [
            os.path.join(work, "out", "train"), "--data", os.path.join(work, "data"),
            "--steps", str(args.steps), "--shuffle", "off", "--log", log,
            "--export-onnx", trained], check=True, stdout=subprocess.PIPE, text=True)
        if args.ranks > 1:
            same = [ln for ln in p.stdout.splitlines() if "weights identical on every rank" in ln]
            print(same[0] if same else "FAIL: no 'weights identical' line:\n" + p.stdout)
            if not same:
                return 1
        rows = list(csv.DictReader(open(log)))
        losses = [float(r["loss"]) for r in rows]
        skipped = sum(int(r["skipped"]) for r in rows)
        if len(losses) != len(ref["losses"]):
            print("FAIL: %d steps logged, %d expected" % (len(losses), len(ref["losses"])))
            return 1
        worst, at = 0.0, 0
        for i, (a, b) in enumerate(zip(losses, ref["losses"])):
            d = abs(a - b) / max(abs(b), 1e-12)
            if d > worst:
                worst, at = d, i + 1
        print("%s %s %s: %d steps, loss %.6f -> %.6f (torch %.6f -> %.6f), largest relative "
              "deviation %.2e at step %d (bound %.0e), %d skipped"
              % (args.model, args.optimizer, args.precision, len(losses), losses[0], losses[-1],
                 ref["losses"][0], ref["losses"][-1], worst, at, rtol, skipped))
        if worst > rtol:
            print("FAIL: the loss curve leaves PyTorch's")
            return 1
        if ref.get("branches"):
            # a run-time If: only a curve that took both branches, each
            # several times, checks the gradients of both
            taken = ref["branches"]
            print("branches taken: then %d, else %d of %d steps" % (taken[0], taken[1],
                                                                    len(losses)))
            if min(taken) < min(5, len(losses) // 4):
                print("FAIL: the data no longer takes both branches")
                return 1
        if args.resume_at:
            part = os.path.join(work, "part.csv")
            ck = os.path.join(work, "ck")
            run = launcher(args.ranks) + [
                os.path.join(work, "out", "train"), "--data", os.path.join(work, "data"),
                "--shuffle", "off", "--log", part, "--checkpoint", ck]
            subprocess.run(run + ["--steps", str(args.resume_at), "--checkpoint-every",
                                  str(args.resume_at)], check=True, stdout=subprocess.DEVNULL)
            subprocess.run(run + ["--steps", str(args.steps), "--resume"], check=True,
                           stdout=subprocess.DEVNULL)
            resumed = [r["loss"] for r in csv.DictReader(open(part))]
            same = resumed == [r["loss"] for r in rows]
            print("stopped after %d steps and resumed: %s" % (
                args.resume_at, "the same %d losses" % len(resumed) if same
                else "losses differ  FAIL"))
            if not same:
                return 1
            if args.ranks > 1 and (check_other_count(args, work, ref) or
                                   check_nonfinite_rank(args, work, ref) or
                                   check_killed_rank(args, work)):
                return 1
        if ref["loss"] == "none":
            status = check_bad_label(work)
            if status:
                return status
        return check_trained(args, work, ref, trained)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
