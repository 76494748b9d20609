"""Score held-out batch 10: healthy runs must be clean (0 fail, 0 warn); a bugged run is named when
one of its ACCEPT entries is a fail or warn. Usage: score.py OUT BIN (OUT holds runs/)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from score_batch import score  # noqa: E402

# Entries that explain each bug, written from the bug descriptions before the runs were scored.
# A cosine whose decay_steps were meant as epochs but count batches reaches zero in the first
# epoch: the schedule's cadence (O8), its plotted shape (S2.1), and an LR too low to learn (O7).
# An EMA copy that is never updated has no entry of its own: DF2 (the EMA copy against the raw
# weights) and F7 (a silent failure) come nearest. The hovering agent games its reward (R1, F7).
ACCEPT = {
    'fastai_mlp_highlr_dead_relu': ['O25'],
    'keras_cosine_decay_epochs_as_steps': ['O8', 'S2.1', 'O7'],
    'lightning_new_head_not_optimized': ['O2'],
    'ignite_bn_dropout_stuck_in_eval': ['O5'],
    'sb3_ppo_reach_hover_reward': ['R1', 'F7'],
    'timm_vit_ema_never_updated': ['DF2', 'F7'],
}
score(__file__, ACCEPT)
