"""torch.distributed.checkpoint runs: a tiny MLP language model sharded with FSDP2
(fully_shard) over two gloo ranks on CPU, saved with dcp.save every 100 steps as
step_N/__0_0.distcp, __1_0.distcp, .metadata (model + optimizer state dicts from
get_state_dict), and rank 0's stdout captured as train.log."""
import math
import os
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.checkpoint.state_dict import get_state_dict

from common import VOCAB, markov, record, run_dir, versions


class TinyLM(nn.Module):
    def __init__(self, d=32, ctx=4, hidden=64, init_std=None):
        super().__init__()
        self.ctx = ctx
        self.embed = nn.Embedding(VOCAB, d)
        self.fc1 = nn.Linear(ctx * d, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.out = nn.Linear(hidden, VOCAB)
        if init_std is not None:
            for m in self.modules():
                if isinstance(m, (nn.Linear, nn.Embedding)):
                    nn.init.normal_(m.weight, 0.0, init_std)

    def forward(self, x):
        h = self.embed(x).flatten(1)
        h = F.gelu(self.fc1(h))
        h = self.norm(F.gelu(self.fc2(h)))
        return self.out(h)


def worker(rank, world, out, kw, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    from torch.distributed.fsdp import fully_shard

    torch.manual_seed(0)
    model = TinyLM(init_std=kw.get("init_std"))
    for layer in (model.fc1, model.fc2):
        fully_shard(layer)
    fully_shard(model)
    lr, steps = kw.get("lr", 3e-3), 300
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / 30 if s < 30 else 0.5 * (1 + math.cos(math.pi * (s - 30) / (steps - 30))))
    seqs = markov(4096, 5, seed=1 + rank)
    g = torch.Generator().manual_seed(rank)
    log = open(out / "train.log", "a") if rank == 0 else None

    def save(step):
        msd, osd = get_state_dict(model, opt)
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=str(out / f"step_{step}"))

    freeze_at = kw.get("freeze_at")
    save(0)
    for step in range(1, steps + 1):
        if freeze_at is not None and step == freeze_at:
            model.fc1.requires_grad_(False)
        ix = torch.randint(0, seqs.shape[0], (32,), generator=g)
        b = seqs[ix]
        loss = F.cross_entropy(model(b[:, :4]), b[:, 4])
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=freeze_at is None)
        if step % 10 == 0:
            lv = loss.detach().clone()
            dist.all_reduce(lv)
            if log:
                log.write(f"step {step} | loss {lv.item() / world:.4f} | lr {sched.get_last_lr()[0]:.3e}"
                          f" | grad_norm {float(gn.full_tensor() if hasattr(gn, 'full_tensor') else gn):.4f}\n")
        if step % 150 == 0:
            save(step)
            if log:
                log.write(f"saved checkpoint step_{step}\n")
    if log:
        log.close()
    dist.destroy_process_group()


RUNS = {
    "dcp_fsdp_healthy": (dict(), None, [], {"vocab_size": "64"}),
    "dcp_fsdp_bad_init": (dict(init_std=1.0), "every weight drawn with std 1.0",
                          ["S5.1", "S1.1"], {"vocab_size": "64"}),
    "dcp_fsdp_frozen_in_optimizer": (
        dict(freeze_at=150),
        "fc1 frozen at step 150 with requires_grad_(False), left in AdamW, grads zeroed not freed",
        ["O17"], {"frozen": "fc1", "vocab_size": "64"}),
}

if __name__ == "__main__":
    made = versions("torch") + "; FSDP2 fully_shard, gloo, 2 ranks, torch.distributed.checkpoint"
    port = 29511
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        out = run_dir(name)
        (out / "train.log").write_text("world_size=2 backend=gloo model=TinyLM\n")
        mp.spawn(worker, args=(2, out, kw, port), nprocs=2, join=True)
        port += 1
        record(name, made, bug, accept, facts)
