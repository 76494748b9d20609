"""Score held-out batch 9: healthy runs must be clean (0 fail, 0 warn); a bugged run is named when
one of its ACCEPT entries is a fail or warn. Usage: score.py OUT BIN (OUT holds runs/)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from score_batch import score  # noqa: E402

# Entries that explain each bug, written from the bug descriptions before the runs were scored.
# The catalog has no entry for a shaped reward the agent exploits in classic RL: R1 (reward
# hacking) and F7 (a failure the metric hides) come nearest. The DQN whose online net is reset
# to its start every sync leaves identical weights (O2) and a return that falls (R1).
ACCEPT = {
    'hf_gpt2_sft_sorting': ['L2', 'O15'],
    'peft_lora_bert_classifier': ['O21', 'O2'],
    'sb3_ppo_mountaincar_shaped': ['R1', 'F7'],
    'ignite_timm_shapes_cosine': ['O8', 'S2.1'],
    'keras_digits_cnn': ['O12'],
    'dqn_cartpole_custom': ['O2', 'F7', 'R1'],
}
score(__file__, ACCEPT)
