"""PyTorch twins of dptrain's models for timing one forward+backward on the CPU. The architecture is read
from the same job file dptrain reads ([model] keys, defaults as in man dptrain-job(5)); values are random
(timing does not depend on them). Prints one JSON line like tests/bench/model_step.cpp.

Usage: /usr/bin/python3 torch_models.py JOB.toml [--batch B] [--steps N] [--warmup W] [--threads T]
"""
import argparse
import ctypes
import json
import math
import re
import time
import tomllib

import torch
import torch.nn as nn
import torch.nn.functional as F


def mlp(hidden=(256, 128), features=784, classes=10):
    widths = [features, *hidden]
    layers = []
    for a, b in zip(widths, widths[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(widths[-1], classes))


class ConvNormRelu(nn.Sequential):
    def __init__(self, cin, cout, stride):
        super().__init__(nn.Conv2d(cin, cout, 3, stride, 1), nn.GroupNorm(1, cout), nn.ReLU())


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.n1 = nn.Conv2d(c, c, 3, 1, 1), nn.GroupNorm(1, c)
        self.c2, self.n2 = nn.Conv2d(c, c, 3, 1, 1), nn.GroupNorm(1, c)

    def forward(self, x):
        h = F.relu(self.n1(self.c1(x)))
        return F.relu(self.n2(self.c2(h)) + x)


def cnn(channels=(16, 32), blocks=1, classes=10):
    layers = [ConvNormRelu(1, channels[0], 1)]
    for s, c in enumerate(channels):
        if s > 0:
            layers.append(ConvNormRelu(channels[s - 1], c, 2))
        layers += [Residual(c) for _ in range(blocks)]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels[-1], classes)]
    return nn.Sequential(*layers)


class Block(nn.Module):
    def __init__(self, c, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.qkv, self.proj = nn.LayerNorm(c), nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.ln2, self.fc, self.fcp = nn.LayerNorm(c), nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(c // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.fcp(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, vocab=155, context=128, width=128, layers=4, heads=4, tied_head=True):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, width), nn.Embedding(context, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.lnf = nn.LayerNorm(width)
        self.head = None if tied_head else nn.Linear(width, vocab, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        x = self.lnf(x)
        return x @ self.wte.weight.t() if self.head is None else self.head(x)


def torch_machine():
    """What this PyTorch computes with: version, BLAS (and OpenBLAS's kernel set when it is OpenBLAS),
    oneDNN, the ATen kernels' instruction set, threads."""
    config = torch.__config__.show()
    blas = re.search(r"BLAS_INFO=([^,\s]+)", config)
    blas = blas.group(1) if blas else "?"
    for lib in ("libopenblas.so.0", "libblas.so.3") if blas in ("generic", "open", "openblas") else ():
        try:
            so = ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
            so.openblas_get_corename.restype = ctypes.c_char_p
            blas += f" = OpenBLAS {so.openblas_get_corename().decode()} kernels"
            break
        except (OSError, AttributeError):
            continue  # Debian's torch calls the system BLAS (libblas.so.3, OpenBLAS by default)
    dnnl = re.search(r"(MKL-DNN|oneDNN) (v[0-9.]+)", config)
    cap = (torch.backends.cpu.get_cpu_capability() if hasattr(torch.backends, "cpu")
           and hasattr(torch.backends.cpu, "get_cpu_capability") else None)
    if cap is None:
        m = re.search(r"CPU capability usage: (\S+)", config)
        cap = m.group(1) if m else "?"
    return (f"torch {torch.__version__}: BLAS {blas}; oneDNN {dnnl.group(2) if dnnl else 'absent'}; "
            f"ATen CPU capability {cap}; {torch.get_num_threads()} thread(s)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("job", help="the dptrain job file whose [model] to build")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=155, help="text vocabulary (the Jargon File has 155)")
    a = ap.parse_args()
    with open(a.job, "rb") as f:
        job = tomllib.load(f)
    m, d = job.get("model", {}), job.get("data", {})
    a.model = m.get("type", "mlp")
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    if a.model == "gpt":
        t = d.get("context", 128)
        model = Gpt(vocab=a.vocab, context=m.get("context", 128), width=m.get("width", 128),
                    layers=m.get("layers", 4), heads=m.get("heads", 4), tied_head=m.get("tied_head", True))
        x = torch.randint(0, a.vocab, (a.batch, t))
        y = torch.randint(0, a.vocab, (a.batch, t))
        loss_fn = lambda out: F.cross_entropy(out.reshape(-1, a.vocab), y.view(-1))
    else:
        model = (mlp(tuple(m.get("hidden", (256, 128)))) if a.model == "mlp"
                 else cnn(tuple(m.get("channels", (16, 32))), m.get("blocks", 1)))
        x = torch.randn(a.batch, 784) if a.model == "mlp" else torch.randn(a.batch, 1, 28, 28)
        y = torch.randint(0, 10, (a.batch,))
        loss_fn = lambda out: F.cross_entropy(out, y)
    ms = []
    for s in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        for p in model.parameters():
            p.grad = None
        loss_fn(model(x)).backward()
        t1 = time.perf_counter()
        if s >= a.warmup:
            ms.append((t1 - t0) * 1000)
    ms.sort()
    med = ms[len(ms) // 2]
    print(json.dumps({"runner": "torch " + torch.__version__, "model": a.model,
                      "parameters": sum(p.numel() for p in model.parameters()), "batch": a.batch,
                      "threads": a.threads, "ms_min": round(ms[0], 3), "ms_median": round(med, 3),
                      "samples_per_sec": round(a.batch * 1000 / med, 1), "machine": torch_machine()}))


if __name__ == "__main__":
    main()
