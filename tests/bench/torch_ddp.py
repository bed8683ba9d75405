#!/usr/bin/python3
"""PyTorch DDP (gloo) baseline for dptrain's data-parallel benchmarks (ddp_vs_dptrain.sh).

Trains the same model as `dptrain run configs/quickstart.toml` (--model mlp: 784-256-128-10 MLP, ReLU,
AdamW lr 2e-3, warm-up 100 steps) or `configs/cnn.toml` (--model cnn: the residual CNN with per-sample
norm of torch_models.py, channels 8, 16, 32, one block per stage, AdamW lr 1e-2, warm-up 200 steps),
cross-entropy, weight decay 1e-4, betas 0.9, 0.999, eps 1e-8, linear warm-up then cosine to 0, on
Fashion-MNIST held in memory as tensors, with the global batch split evenly over the ranks and the
epoch's samples taken in the order of a per-epoch permutation.

Timed like dptrain's summary.json samples_per_sec: rank 0 sums the wall time of every training step
(batch gather, forward, backward with DDP's gradient allreduce, optimizer step); process start,
data loading, DDP construction and the final evaluation are not timed.

Prints one JSON line on stdout: samples_per_sec, steps, train_loss (last step, global batch),
test_accuracy, test_loss, ...  With --profile the model is NOT wrapped in DDP: each step is split
into gather / forward / backward / wait (barrier) / allreduce (one flat buffer) / step, mirroring
dptrain's compute_ms / wait_ms / comm_ms / update_ms, and the mean ms of each is printed as well.

Run with Debian's Python (the one that has torch 1.13):
  /usr/bin/python3 tests/bench/torch_ddp.py --model cnn --ranks 2 --threads 1 --batch 128 --epochs 1
"""
import argparse
import gzip
import json
import math
import os
import socket
import struct
import sys
import time

DATA_DIR = "/usr/share/datasets/fashion-mnist"
MEAN, STD = 0.2860, 0.3530


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="intra-op (and BLAS) threads per rank")
    p.add_argument("--batch", type=int, default=128, help="global batch, split evenly over ranks")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--steps", type=int, default=0, help="> 0: stop after this many steps")
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--hidden", default="256,128", help="mlp: hidden widths")
    p.add_argument("--channels", default="8,16,32", help="cnn: stage widths")
    p.add_argument("--lr", type=float, default=None, help="default: the config's (mlp 2e-3, cnn 1e-2)")
    p.add_argument("--weight-decay", type=float, default=1e-4)
    p.add_argument("--warmup-steps", type=int, default=None, help="default: the config's (mlp 100, cnn 200)")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--data", default=DATA_DIR)
    p.add_argument("--pin", choices=["core", "none"], default="core",
                   help="core: bind rank r to CPU r %% cores, as mpirun does for dptrain's ranks "
                        "(its default --bind-to core when ranks <= cores)")
    p.add_argument("--profile", action="store_true",
                   help="diagnostic: no DDP; time gather/forward/backward/wait/allreduce/step separately")
    a = p.parse_args()
    a.lr = a.lr if a.lr is not None else {"mlp": 2e-3, "cnn": 1e-2}[a.model]
    a.warmup_steps = a.warmup_steps if a.warmup_steps is not None else {"mlp": 100, "cnn": 200}[a.model]
    return a


def read_idx(path):
    """A gzip IDX file as a numpy array (uint8 data only, which is all Fashion-MNIST uses)."""
    import numpy as np
    with gzip.open(path, "rb") as f:
        raw = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not a uint8 IDX file")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(data_dir, split, model):
    import numpy as np
    import torch
    images = read_idx(f"{data_dir}/{split}-images-idx3-ubyte.gz")
    labels = read_idx(f"{data_dir}/{split}-labels-idx1-ubyte.gz")
    # The same look-up table as dptrain: computed in double, stored as float.
    lut = ((np.arange(256, dtype=np.float64) / 255.0 - MEAN) / STD).astype(np.float32)
    x = torch.from_numpy(lut[images.reshape(images.shape[0], -1)])
    if model == "cnn":
        x = x.view(-1, 1, 28, 28)
    y = torch.from_numpy(labels.astype(np.int64))
    return x.contiguous(), y


def learning_rate(a, step, total_steps):
    """dptrain's schedule: linear warm-up from lr/warmup to lr, then cosine to min_lr = 0."""
    if step < a.warmup_steps:
        return a.lr * (step + 1) / a.warmup_steps
    span = max(1, total_steps - a.warmup_steps)
    progress = min(1.0, (step - a.warmup_steps) / span)
    return a.lr * 0.5 * (1.0 + math.cos(math.pi * progress))


def equal_shares(batch, world):
    shares = [batch // world] * world
    for r in range(batch % world):
        shares[r] += 1
    return shares


def worker(rank, a, port, queue):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    if a.pin == "core":
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)  # the same initial parameters on every rank (DDP broadcasts rank 0's anyway)
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch_models  # the twins of dptrain's models

    train_x, train_y = load_split(a.data, "train", a.model)
    n = train_x.shape[0]
    if a.model == "mlp":  # nn.Linear's U(-1/sqrt(in), 1/sqrt(in)), like dptrain
        net = torch_models.mlp(tuple(int(h) for h in a.hidden.split(",") if h))
    else:
        net = torch_models.cnn(tuple(int(c) for c in a.channels.split(",") if c), 1)
    model = net if a.profile else DDP(net)
    opt = torch.optim.AdamW(net.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=a.weight_decay)
    params = list(net.parameters())

    steps_per_epoch = (n + a.batch - 1) // a.batch
    total_steps = a.steps if a.steps > 0 else a.epochs * steps_per_epoch
    gen = torch.Generator()
    perm, perm_epoch = None, -1
    train_seconds, trained, last_loss = 0.0, 0, torch.zeros(())
    split_names = ["gather", "forward", "backward", "wait", "allreduce", "step"]
    split_ms = [0.0] * len(split_names)
    clock = time.perf_counter

    dist.barrier()  # everyone is ready before the first timed step, as in dptrain
    for step in range(total_steps):
        epoch, in_epoch = divmod(step, steps_per_epoch)
        if epoch != perm_epoch:  # once an epoch, before the timed step (as in dptrain)
            gen.manual_seed(a.seed * 1000003 + epoch)
            perm = torch.randperm(n, generator=gen)
            perm_epoch = epoch
        batch = min(a.batch, n - in_epoch * a.batch)
        shares = equal_shares(batch, a.ranks)
        begin = in_epoch * a.batch + sum(shares[:rank])
        for g in opt.param_groups:
            g["lr"] = learning_rate(a, step, total_steps)

        t0 = clock()
        idx = perm[begin:begin + shares[rank]]
        x = train_x.index_select(0, idx)
        y = train_y.index_select(0, idx)
        if not a.profile:
            opt.zero_grad(set_to_none=True)
            # Mean over the local share; DDP averages over ranks: the mean over the global batch.
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            t1 = clock()
        else:
            opt.zero_grad(set_to_none=True)
            t1 = clock()
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            t2 = clock()
            loss.backward()
            t3 = clock()
            dist.barrier()
            t4 = clock()
            flat = torch.cat([p.grad.reshape(-1) for p in params])
            dist.all_reduce(flat)
            flat.div_(a.ranks)
            off = 0
            for p in params:
                k = p.numel()
                p.grad.copy_(flat[off:off + k].view_as(p.grad))
                off += k
            t5 = clock()
            opt.step()
            t6 = clock()
            for i, d in enumerate((t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4, t6 - t5)):
                split_ms[i] += d * 1e3
            t1 = t6
        train_seconds += t1 - t0
        trained += batch
        last_loss = loss.detach()

    # Untimed: the last step's loss over the global batch, then rank 0 evaluates the test set.
    lsum = last_loss * shares[rank]
    dist.all_reduce(lsum)
    if rank == 0:
        test_x, test_y = load_split(a.data, "t10k", a.model)
        with torch.no_grad():
            logits = torch.cat([net(chunk) for chunk in test_x.split(1000)])
            test_loss = F.cross_entropy(logits, test_y).item()
            test_acc = (logits.argmax(1) == test_y).float().mean().item()
        out = {
            "runner": "torch-ddp-gloo" if not a.profile else "torch-profile",
            "model": a.model,
            "torch": torch.__version__,
            "samples_per_sec": trained / train_seconds,
            "train_seconds": train_seconds,
            "steps": total_steps,
            "ranks": a.ranks,
            "threads": torch.get_num_threads(),
            "global_batch": a.batch,
            "train_loss": lsum.item() / batch,
            "test_loss": test_loss,
            "test_accuracy": test_acc,
            "parameters": sum(p.numel() for p in params),
        }
        if a.profile:
            out["mean_ms"] = {k: round(v / total_steps, 4) for k, v in zip(split_names, split_ms)}
        queue.put(out)
    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    a = parse_args()
    # OpenBLAS (Debian's torch BLAS) and OpenMP read these at load time; torch.set_num_threads does not
    # reach OpenBLAS's own thread pool. The children inherit them.
    os.environ["OMP_NUM_THREADS"] = str(a.threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(a.threads)
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(worker, args=(a, free_port(), queue), nprocs=a.ranks, join=True)
    print(json.dumps(queue.get()), flush=True)


if __name__ == "__main__":
    sys.exit(main())
