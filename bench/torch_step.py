"""End-to-end benchmark (not a test): one training step of a small transformer
on the CPU with torch's own LayerNorm kernels and with lngrad.torch.install(),
timed alternately in one process on the same model and data.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_step.py            # the README's numbers
    PYTHONPATH=build/python /usr/bin/python3 bench/torch_step.py --layers 1 --seq 64 --rounds 2   # quick look

A step is zero_grad, forward, mean-squared-error loss, backward and an SGD
update of a stack of pre-norm nn.TransformerEncoderLayers (two LayerNorms
each) and a final LayerNorm. Each round runs one step of each kind, in
alternating order (torch first in even rounds, lngrad first in odd ones), so
that a slow spell of a shared machine falls on both. Every step runs under
torch.profiler, which gives the time spent in aten::native_layer_norm and
aten::native_layer_norm_backward (operator totals, allocation of their
outputs included); its overhead, a few microseconds per operator, is far
below a percent of a step here and falls on both kinds. Reported per dtype:
median and range over the rounds of the step time, of the LayerNorm time and
its share of the step, the speed-ups as medians of the rounds' paired
ratios, and the load other processes put on the machine during the steps
(from /proc/stat, in cores), which explains the spread on a shared machine.

torch's float32 matrix products go through whatever libblas.so.3 is
installed (printed first): Debian's default is the reference BLAS, a few
GFLOP/s, under which matrix products take nearly all of a step.
"""

import argparse
import os
import statistics
import time

import torch

import lngrad
import lngrad.torch

LN_OPS = ("aten::native_layer_norm", "aten::native_layer_norm_backward")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--d-model", type=int, default=768)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--warmup", type=int, default=1, help="untimed steps of each kind first")
    return p.parse_args()


def busy_jiffies():
    """(busy, total) CPU time of the whole machine so far, in clock ticks."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


class Model(torch.nn.Module):
    def __init__(self, a, dtype):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(a.d_model, a.heads, 4 * a.d_model, dropout=0.0, batch_first=True,
                                                 norm_first=True, dtype=dtype)
        self.encoder = torch.nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(a.d_model, dtype=dtype)

    def forward(self, x):
        return self.norm(self.encoder(x))


def make_step(a, dtype):
    torch.manual_seed(0)
    model = Model(a, dtype)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(a.batch, a.seq, a.d_model).to(dtype)
    target = torch.randn(a.batch, a.seq, a.d_model)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x).float(), target)  # 1.13 has no bfloat16 mse on CPU
        loss.backward()
        opt.step()
    return step


def timed(step, use_lngrad):
    """One step under the profiler: (seconds, seconds in LayerNorm, other
    processes' load during it in cores)."""
    if use_lngrad:
        lngrad.torch.install()
    else:
        lngrad.torch.uninstall()
    busy0, total0 = busy_jiffies()
    cpu0 = time.process_time()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        step()
        seconds = time.perf_counter() - t0
    own = time.process_time() - cpu0
    busy1, total1 = busy_jiffies()
    busy = (busy1 - busy0) / max(1, total1 - total0) * (os.cpu_count() or 1) * seconds  # core-seconds
    ln = sum(e.cpu_time_total for e in prof.key_averages() if e.key in LN_OPS) / 1e6
    return seconds, ln, max(0.0, (busy - own) / seconds)


def blas():
    """The BLAS library this process loaded (torch's float32 matrix products
    go through it): Debian's python3-torch takes whatever libblas.so.3 is."""
    torch.randn(64, 64) @ torch.randn(64, 64)
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "blas" in line and ".so" in line}
    return ", ".join(sorted(paths)) or "none found"


def spread(values):
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main():
    a = parse_args()
    torch.set_num_threads(a.threads)
    print(f"torch {torch.__version__}, lngrad {lngrad.__version__} ({lngrad.active_target()}), {a.threads} threads; "
          f"{a.layers} layers, d={a.d_model}, {a.heads} heads, sequence {a.seq}, batch {a.batch}; "
          f"{a.rounds} rounds\nBLAS: {blas()}")
    for name in a.dtypes.split(","):
        dtype = getattr(torch, name)
        step = make_step(a, dtype)
        for _ in range(a.warmup):
            for mode in (False, True):
                timed(step, mode)
        times = {False: [], True: []}
        shares = {False: [], True: []}
        ln_ms = {False: [], True: []}
        loads, ratios = [], []
        for r in range(a.rounds):
            order = (False, True) if r % 2 == 0 else (True, False)
            got = {}
            for mode in order:
                got[mode], ln, load = timed(step, mode)
                times[mode].append(got[mode])
                shares[mode].append(100 * ln / got[mode])
                ln_ms[mode].append(1e3 * ln)
                loads.append(load)
            ratios.append(got[False] / got[True])
        lngrad.torch.uninstall()
        print(f"\n{name}: median (range) over {a.rounds} rounds")
        for mode, label in ((False, "torch's LayerNorm"), (True, "lngrad installed")):
            print(f"  {label:18s} step {spread(times[mode])} s; LayerNorm {spread(ln_ms[mode])} ms, "
                  f"{spread(shares[mode])}% of the step")
        ln_ratio = [t / l for t, l in zip(ln_ms[False], ln_ms[True])]
        print(f"  speed-up, paired rounds: whole step {spread(ratios)}x, LayerNorm {spread(ln_ratio)}x")
        print(f"  other processes' load during the steps: {spread(loads)} cores")

if __name__ == "__main__":
    main()
