"""Data-parallel training with lngrad installed: 2 and 4 processes on this
machine (gloo over the loopback interface only, a file store for the
rendezvous, so no port is chosen) each train their shard of one batch under
DistributedDataParallel; every rank must end with the parameters of one
process trained on the whole batch."""

import os
import pathlib
import subprocess
import sys
import time

import pytest
import torch

import ddp_model
import lngrad.torch as lt

HERE = pathlib.Path(__file__).resolve().parent
STEPS = 4
LAUNCH_TIMEOUT_S = 240  # four ranks importing torch on two busy cores take about 20 s


def launch(tmp_path, world):
    """Runs ddp_worker.py as `world` ranks; returns each rank's parameters."""
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1"}
    outs = [tmp_path / f"rank{r}.pt" for r in range(world)]
    procs = [subprocess.Popen([sys.executable, str(HERE / "ddp_worker.py"), str(r), str(world),
                               str(tmp_path / "store"), str(STEPS), str(outs[r])],
                              env=env, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(world)]
    deadline = time.monotonic() + LAUNCH_TIMEOUT_S
    logs = []
    try:
        for p in procs:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            logs.append(out)
    finally:
        for p in procs:  # a rank left waiting on a failed one must not outlive the test
            if p.poll() is None:
                p.kill()
                p.wait()
    for r, p in enumerate(procs):
        assert p.returncode == 0, f"rank {r} exited with {p.returncode}:\n{logs[r] if r < len(logs) else ''}"
    return [torch.load(o) for o in outs]


def single_process(dtype, install):
    net = ddp_model.model(dtype)
    x, y = ddp_model.data(dtype)
    with lt.install() if install else _nothing():
        ddp_model.train(net, x, y, STEPS)
    return ddp_model.parameters(net)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.fixture(scope="module")
def references():
    torch.set_num_threads(1)
    # The float64 run uses torch's own kernels: an oracle independent of lngrad.
    return single_process(torch.float32, install=True), single_process(torch.float64, install=False)


@pytest.mark.parametrize("world", [2, 4])
def test_every_rank_equals_one_process_on_the_whole_batch(tmp_path, world, references):
    ranks = launch(tmp_path, world)
    single32, single64 = references
    # DDP hands every rank the same averaged gradients and each applies the
    # same update, so the ranks agree bit for bit.
    for r in range(1, world):
        for name in ranks[0]:
            assert torch.equal(ranks[r][name], ranks[0][name]), (r, name)
    # Against one process: both runs are float32 evaluations of the same
    # steps, differing only in the order of the sums over the batch (each rank
    # sums its shard, the allreduce adds the shards) and in the matrix shapes
    # torch's kernels see. So each is as far from the float64 run as float32
    # rounding puts the other: the DDP error must stay within 4x the
    # one-process float32 error of that tensor, plus one float32 rounding of
    # its largest entry (for a tensor the one-process run happens to get
    # almost exact). Both are about 1e-7 of the parameters here, while a
    # wrong average or a lost shard moves them by the learning rate times the
    # gradient, about 1e-3.
    u = 2.0 ** -24
    for name, exact in single64.items():
        ddp_err = (ranks[0][name].double() - exact).abs().max().item()
        own_err = (single32[name].double() - exact).abs().max().item()
        bound = 4 * own_err + u * exact.abs().max().item()
        assert ddp_err <= bound, f"{name}: DDP error {ddp_err:.3g} > {bound:.3g} (one process: {own_err:.3g})"
    moved = max((single64[n] - ddp_model.model(torch.float64).state_dict()[n]).abs().max().item() for n in single64)
    assert moved > 1e-3, "the training steps did not move the parameters"


def test_the_example_trains_under_torchrun(tmp_path):
    """examples/ddp_train.py as the README runs it (torchrun, two processes),
    briefly: it must learn (the loss halves) and write its plot. The rendezvous
    store is torchrun's c10d one at 127.0.0.1, on a port the system picks."""
    example = HERE.parents[1] / "examples" / "ddp_train.py"
    png = tmp_path / "loss.png"
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "2",
         "--rdzv_backend", "c10d", "--rdzv_endpoint", "127.0.0.1:0", "--redirects", "1", "--tee", "1",
         "--log_dir", str(tmp_path / "logs"), str(example), "--steps", "80", "--batch", "8", "--plot", str(png)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    line = next(ln for ln in proc.stdout.splitlines() if "LayerNorm kernels: lngrad" in ln)
    first, last = (float(v) for v in line.rsplit("loss ", 1)[1].split(" -> "))
    assert last < first / 2, line
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
