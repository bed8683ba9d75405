"""PyTorch's convolutions on the example CNN's layers, for bench_conv_step (tests/bench/conv_step.cpp):
forward, and backward with input, weight and bias gradients, on one thread. Prints one JSON line per
layer like bench_conv_step, then one with this PyTorch's machine line (torch_models.torch_machine).

Usage: python torch_conv.py [--batch B] [--reps N] [--threads T]
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_models import torch_machine  # noqa: E402

LAYERS = [("stem", 1, 28, 8, 1), ("res8", 8, 28, 8, 1), ("down16", 8, 28, 16, 2),
          ("res16", 16, 14, 16, 1), ("down32", 16, 14, 32, 2), ("res32", 32, 7, 32, 1)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    for name, c, h, o, stride in LAYERS:
        x = torch.rand(a.batch, c, h, h).sub_(0.5).requires_grad_()
        w = torch.rand(o, c, 3, 3).sub_(0.5).requires_grad_()
        b = torch.rand(o).sub_(0.5).requires_grad_()
        fwd, bwd = [], []
        for r in range(a.reps + 3):
            x.grad = w.grad = b.grad = None
            t0 = time.perf_counter()
            y = F.conv2d(x, w, b, stride=stride, padding=1)
            t1 = time.perf_counter()
            y.backward(torch.ones_like(y) if r == 0 else dy)
            t2 = time.perf_counter()
            if r == 0:
                dy = torch.rand_like(y).sub_(0.5)
            if r >= 3:
                fwd.append((t1 - t0) * 1e3)
                bwd.append((t2 - t1) * 1e3)
        fwd.sort()
        bwd.sort()
        print(json.dumps({"runner": "torch " + torch.__version__, "layer": name,
                          "shape": f"{a.batch}x{c}x{h}x{h} -> {o} s{stride}", "fwd_min": round(fwd[0], 4),
                          "fwd_median": round(fwd[len(fwd) // 2], 4), "bwd_min": round(bwd[0], 4),
                          "bwd_median": round(bwd[len(bwd) // 2], 4)}))
    print(json.dumps({"machine": torch_machine()}))


if __name__ == "__main__":
    main()
