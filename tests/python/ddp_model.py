"""The model, data and training loop shared by test_ddp.py and the processes it
launches (ddp_worker.py): a pre-norm transformer block that uses
torch.nn.LayerNorm only, trained with SGD on a mean-squared error."""

import torch

D, HEADS, SEQ, BATCH = 32, 4, 8, 8  # BATCH divides into 2 and 4 equal shards
LR, MOMENTUM = 0.05, 0.9


class Block(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D, dtype=dtype)
        self.attn = torch.nn.MultiheadAttention(D, HEADS, batch_first=True, dtype=dtype)
        self.ln2 = torch.nn.LayerNorm(D, dtype=dtype)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D, 4 * D, dtype=dtype), torch.nn.GELU(),
                                       torch.nn.Linear(4 * D, D, dtype=dtype))
        self.ln_out = torch.nn.LayerNorm(D, dtype=dtype)
        self.head = torch.nn.Linear(D, D, dtype=dtype)

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.mlp(self.ln2(x))
        return self.head(self.ln_out(x))


def model(dtype=torch.float32):
    """The same initial parameters in every process (float64 holds the float32 values exactly)."""
    torch.manual_seed(0)
    m = Block(torch.float32)
    with torch.no_grad():  # LayerNorm parameters away from ones and zeros
        for ln in (m.ln1, m.ln2, m.ln_out):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.normal_(0, 0.5)
    return m.to(dtype)


def data(dtype=torch.float32):
    """The full batch: inputs with a non-zero mean, and targets."""
    g = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH, SEQ, D, generator=g) + 0.5
    y = torch.randn(BATCH, SEQ, D, generator=g)
    return x.to(dtype), y.to(dtype)


def train(net, x, y, steps):
    """SGD on mean((net(x) - y)^2) over the given rows: the full batch in one
    process, a shard under DistributedDataParallel (which averages the shards'
    gradients, so a step sees the full batch's mean gradient either way)."""
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()


def parameters(net):
    """name -> detached parameter (DistributedDataParallel's 'module.' prefix removed)."""
    module = getattr(net, "module", net)
    return {n: p.detach().clone() for n, p in module.named_parameters()}
