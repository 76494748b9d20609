"""DeepSpeed ZeRO-2 runs on CPU (DS_ACCELERATOR=cpu, gloo, 2 ranks; DeepSpeed JIT-builds its
shm comm op, so `ninja` and a C++ compiler must be present): engine.save_checkpoint writes
latest + global_stepN/mp_rank_00_model_states.pt + zero_pp_rank_R_mp_rank_00_optim_states.pt;
DeepSpeed's tensorboard monitor writes Train/Samples/* events; rank 0's stdout is train.log.
DeepSpeed also copies its zero_to_fp32.py / zero_to_torch.py into the output folder; the corpus
replaces those two (third-party code) with one-line placeholders of the same name."""
import contextlib
import io
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

from common import markov, record, run_dir, versions
from dcp_fsdp_runs import TinyLM


def worker(rank, world, out, kw, port):
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                      MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), DS_ACCELERATOR="cpu")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    import deepspeed

    buf = io.StringIO()
    steps = 300
    cfg = {
        "train_micro_batch_size_per_gpu": 16, "gradient_accumulation_steps": 1,
        "steps_per_print": 50, "gradient_clipping": 1.0, "zero_optimization": {"stage": 2},
        "optimizer": {"type": "AdamW", "params": {"lr": kw.get("lr", 3e-3),
                                                  "weight_decay": kw.get("wd", 0.0),
                                                  "torch_adam": True}},
        "scheduler": {"type": "WarmupCosineLR",
                      "params": {"total_num_steps": steps, "warmup_num_steps": 30}},
        "tensorboard": {"enabled": True, "output_path": str(out / "tb"), "job_name": "tinylm"},
    }
    torch.manual_seed(0)
    model = TinyLM(init_std=kw.get("init_std"))
    with contextlib.redirect_stdout(buf):
        eng, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(),
                                            config=cfg)
        seqs = markov(4096, 5, seed=1 + rank)
        g = torch.Generator().manual_seed(rank)
        for step in range(1, steps + 1):
            b = seqs[torch.randint(0, seqs.shape[0], (16,), generator=g)]
            loss = F.cross_entropy(eng(b[:, :4]), b[:, 4])
            eng.backward(loss)
            eng.step()
            if rank == 0 and step % 10 == 0:
                print(f"step {step}: loss={loss.item():.4f} lr={eng.get_lr()[0]:.6f} "
                      f"grad_norm={eng.get_global_grad_norm():.4f}")
            if step % 150 == 0:
                eng.save_checkpoint(str(out), tag=f"global_step{step}")
    if rank == 0:
        (out / "train.log").write_text(buf.getvalue())
        for f in ("zero_to_fp32.py", "zero_to_torch.py"):
            if (out / f).exists():
                (out / f).write_text("# placeholder: DeepSpeed copies its own script here; "
                                     "left out of the corpus\n")
    dist.barrier()
    dist.destroy_process_group()


RUNS = {
    "deepspeed_zero2_healthy": (dict(), None, [], {"vocab_size": "64"}),
    "deepspeed_zero2_bad_init": (dict(init_std=1.0), "every weight drawn with std 1.0",
                                 ["S1.1", "S5.1"], {"vocab_size": "64"}),
    "deepspeed_zero2_no_decay_split": (
        dict(wd=0.1),
        "weight_decay 0.1 in the DeepSpeed optimizer config: one group, biases and LayerNorm decayed",
        ["S6.1", "O6"], {"vocab_size": "64"}),
}

if __name__ == "__main__":
    import deepspeed

    made = versions("torch", "deepspeed") + "; ZeRO-2, CPU accelerator, gloo, 2 ranks"
    port = 29531
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        out = run_dir(name)
        mp.spawn(worker, args=(2, out, kw, port), nprocs=2, join=True)
        port += 1
        record(name, made, bug, accept, facts)
