"""GRPO runs whose completions may run to 32 tokens (trl_runs.py caps them at 8, where length
cannot move), from the SFT model of trl_runs.py (run it first): a healthy run with the same
graded reward as trl_grpo_healthy, and a run whose reward pays for brevity, so completion length
collapses to the EOS alone while the reward climbs: a bug that shows as a good reward."""
import sys

from common import OUT, record, versions
from trl_runs import grpo

CAP = 32


def brevity(completions, **kw):
    """The bug: a length penalty with nothing to earn beside it, so the shortest completion
    always wins its group."""
    return [1.0 - len(c.split()) / CAP for c in completions]


def truth():
    return {"phase": "grpo", "init": "pretrained", "framework": "trl", "resumed_at": None,
            "init_checkpoint": False}


RUNS = ["trl_grpo_len32_healthy", "trl_grpo_length_collapse"]

if __name__ == "__main__":
    want = sys.argv[1:] or RUNS
    made = versions("torch", "transformers", "trl")
    base = OUT / "trl_sft_healthy" / "final"
    if "trl_grpo_len32_healthy" in want:
        grpo("trl_grpo_len32_healthy", base, cap=CAP)
        record("trl_grpo_len32_healthy", made, None, [], {}, profile=truth())
    if "trl_grpo_length_collapse" in want:
        grpo("trl_grpo_length_collapse", base, reward=brevity, cap=CAP)
        record("trl_grpo_length_collapse", made,
               "reward pays only for brevity: completions collapse to their EOS as the reward climbs",
               ["H5"], {}, profile=truth())
