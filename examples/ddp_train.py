"""Data-parallel training of a small transformer on CPUs, with lngrad behind
every LayerNorm (lngrad.torch.install()), over torch.distributed (gloo).

The task: sequences of random tokens; at each position, predict the token one
place earlier (the model has to learn to attend to its neighbour). Each
process draws its own batches; DistributedDataParallel averages the gradients.

One host, two processes (Debian 12's torchrun, torch 1.13 under Python 3.11,
needs --redirects 1 --tee 1; other torch versions do not):
    torchrun --standalone --nproc_per_node 2 --redirects 1 --tee 1 \\
        examples/ddp_train.py --steps 300 --plot loss.png
Several hosts: the same command on each, with the number of hosts and one
host's address, which every host can reach:
    torchrun --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d \\
        --rdzv_endpoint HOST0:29400 --rdzv_id lngrad-demo --redirects 1 --tee 1 \\
        examples/ddp_train.py --steps 300 --plot loss.png
Rank 0 shows a progress bar (python3-tqdm, if installed) and writes the loss
curve (python3-matplotlib) to --plot.
"""

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist

import lngrad.torch


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=16, help="sequences per process and step")
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab", type=int, default=16)
    p.add_argument("--d-model", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--threads", type=int, default=0, help="torch threads per process (0: cores / local processes)")
    p.add_argument("--dtype", choices=("float32", "bfloat16"), default="float32")
    p.add_argument("--no-lngrad", action="store_true", help="keep torch's own LayerNorm kernels")
    p.add_argument("--plot", help="write the loss curve to this PNG file (rank 0)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


class Model(torch.nn.Module):
    """Token and position embeddings, pre-norm transformer encoder layers
    (each with two torch.nn.LayerNorms), a final LayerNorm and a linear head."""

    def __init__(self, a):
        super().__init__()
        self.tokens = torch.nn.Embedding(a.vocab, a.d_model)
        self.positions = torch.nn.Parameter(torch.randn(a.seq, a.d_model))
        layer = torch.nn.TransformerEncoderLayer(a.d_model, a.heads, 4 * a.d_model, dropout=0.0,
                                                 batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, a.layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(a.d_model)
        self.head = torch.nn.Linear(a.d_model, a.vocab)

    def forward(self, tokens):
        return self.head(self.norm(self.encoder(self.tokens(tokens) + self.positions)))


def batch(a, step, rank, world):
    """This process's batch of the global one at `step`: every process draws
    different sequences, reproducibly."""
    g = torch.Generator().manual_seed(a.seed * 1_000_003 + step * world + rank)
    x = torch.randint(0, a.vocab, (a.batch, a.seq), generator=g)
    y = torch.roll(x, 1, dims=1)
    y[:, 0] = -100  # no earlier token: not scored
    return x, y


def progress(steps, enabled):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=steps, unit="step", file=sys.stderr)


def plot(path, losses, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(range(1, len(losses) + 1), losses)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (mean over all processes)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    a = parse_args()
    dist.init_process_group("gloo")  # torchrun sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    torch.set_num_threads(a.threads or max(1, (os.cpu_count() or 1) // local))
    if not a.no_lngrad:
        lngrad.torch.install()  # follows torch.get_num_threads()
    dtype = getattr(torch, a.dtype)

    torch.manual_seed(a.seed)  # the same initial model everywhere (DDP also broadcasts rank 0's)
    model = torch.nn.parallel.DistributedDataParallel(Model(a).to(dtype))
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr)
    losses = []
    bar = progress(a.steps, rank == 0)
    start = time.perf_counter()
    for step in range(a.steps):
        x, y = batch(a, step, rank, world)
        loss = torch.nn.functional.cross_entropy(model(x).float().flatten(0, 1), y.flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # for the log only: the mean over processes
        losses.append(mean.item() / world)
        if bar is not None:
            bar.set_postfix(loss=f"{losses[-1]:.3f}")
            bar.update()
        elif rank == 0 and (step % 25 == 0 or step == a.steps - 1):
            print(f"step {step + 1}/{a.steps}: loss {losses[-1]:.4f}", file=sys.stderr, flush=True)
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - start
    if rank == 0:
        kernels = "lngrad" if lngrad.torch.is_installed() else "torch's own"
        print(f"{world} processes x {torch.get_num_threads()} threads, {a.dtype}, LayerNorm kernels: {kernels}; "
              f"{a.steps} steps in {seconds:.1f} s; loss {losses[0]:.4f} -> {losses[-1]:.4f}", flush=True)
        if a.plot:
            plot(a.plot, losses, f"{world} processes, global batch {world * a.batch}, {a.dtype}, {kernels} LayerNorm")
            print(f"loss curve: {a.plot}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
