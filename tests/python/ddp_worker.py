"""One rank of test_ddp.py's data-parallel run: joins the gloo group through a
file store (no port to choose), trains its shard of ddp_model's batch under
DistributedDataParallel with lngrad.torch.install(), and saves its parameters.

usage: ddp_worker.py RANK WORLD STORE_FILE STEPS OUT_FILE"""

import datetime
import sys

import torch
import torch.distributed as dist

import ddp_model
import lngrad.torch

rank, world, store, steps, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
torch.set_num_threads(1)  # several ranks share this machine's cores
dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                        timeout=datetime.timedelta(seconds=60))
lngrad.torch.install()
net = torch.nn.parallel.DistributedDataParallel(ddp_model.model())
x, y = ddp_model.data()
shard = slice(rank * ddp_model.BATCH // world, (rank + 1) * ddp_model.BATCH // world)
ddp_model.train(net, x[shard], y[shard], steps)
torch.save(ddp_model.parameters(net), out)
dist.destroy_process_group()
