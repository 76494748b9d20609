"""TRL trainers the probes were not written against, healthy, on the tiny GPT-2 of trl_runs.py
(run trl_runs.py first: they start from its SFT model): RLOOTrainer (a group-relative policy
gradient like GRPO, with a leave-one-out baseline) and the experimental ORPOTrainer and
CPOTrainer (reference-free preference losses: odds-ratio plus NLL, and contrastive plus NLL).
RLOO's grad norm is heavy-tailed (0 on steps where no group has reward spread, 10-35 on a few);
it drew a false S3.2 warning until relative spikes stopped counting for group-relative runs."""
import os
import sys

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from transformers import GPT2LMHeadModel

from common import OUT, record, run_dir, versions
from trl_runs import common_args, grpo, prefs, tokenizer


def preference(name, base, kind, lr=5e-4, steps=200):
    if kind == "orpo":
        from trl.experimental.orpo import ORPOConfig as Config, ORPOTrainer as Trainer
    else:
        from trl.experimental.cpo import CPOConfig as Config, CPOTrainer as Trainer
    out = run_dir(name)
    args = Config(**common_args(out, max_steps=steps, learning_rate=lr, beta=0.1, save_steps=steps,
                                per_device_train_batch_size=8, max_length=32))
    tr = Trainer(model=GPT2LMHeadModel.from_pretrained(base), args=args,
                 train_dataset=prefs(8 * steps, 5), processing_class=tokenizer())
    tr.train()


def truth(phase):
    """What the run profile should say: the phase (ORPO and CPO are of the DPO family), from
    the SFT model, a fresh run."""
    return {"phase": phase, "init": "pretrained", "framework": "trl", "resumed_at": None,
            "init_checkpoint": False}


RUNS = ["trl_rloo_healthy", "trl_orpo_healthy", "trl_cpo_healthy"]

if __name__ == "__main__":
    want = sys.argv[1:] or RUNS
    made = versions("torch", "transformers", "trl")
    base = OUT / "trl_sft_healthy" / "final"
    if "trl_rloo_healthy" in want:
        grpo("trl_rloo_healthy", base, kind="rloo")
        record("trl_rloo_healthy", made, None, [], {}, profile=truth("grpo"))
    for kind in ["orpo", "cpo"]:
        name = f"trl_{kind}_healthy"
        if name in want:
            preference(name, base, kind)
            record(name, made, None, [], {}, profile=truth("dpo"))
