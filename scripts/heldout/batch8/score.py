"""Score held-out batch 8: healthy runs must be clean (0 fail, 0 warn); a bugged run is named when
one of its ACCEPT entries is a fail or warn. Usage: score.py OUT BIN (OUT holds runs/)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from score_batch import score  # noqa: E402

# Entries that explain each bug, written from the bug descriptions before the runs were scored
# (the LR that kills the ReLUs accepts what every lr-too-high run does, and O25; the summed
# validation loss accepts what batch 4's did).
ACCEPT = {
    'lit_sine_regress': ['S2.1', 'O8', 'O23'],
    'relu_mlp_regress': ['S4.1', 'S3.1', 'S3.2', 'F19', 'O22', 'O25'],
    'timm_convnext_ft': ['O2', 'O19'],
    'torch_seq_cls': ['V1', 'F12', 'S4.2'],
}
score(__file__, ACCEPT)
