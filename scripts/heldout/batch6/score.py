"""Score the batch-6 held-out runs: python3 score.py OUT_DIR [MLTRIAGE].

Each healthy run must be clean (0 fail, 0 warn); a bugged run is *named* when one of the entries
below (chosen from the bug's description before the runs were scored) is a fail or warn.
OUT_DIR holds runs/ (scripts/heldout/batch6/run_all.sh OUT_DIR) and reads answers.json beside
this script."""
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from score_batch import score  # noqa: E402

# Entries that explain each bug, written from the bug descriptions before the runs were scored
# (the lr-too-high run accepts what every lr x100 field run does).
ACCEPT = {
    'colorboxes_yolov8tiny_scratch': ['V3', 'V4', 'F12', 'F13'],
    'blobs10_relu_mlp4': ['S4.1', 'S3.1', 'S3.2', 'F19', 'O22', 'O25'],
    'clusters8_mlp_ignite_sgd': ['O2', 'O4', 'S4.1'],
    'fruitlist_gpt2tiny_grpo': ['H5', 'R1'],
    'tabular5_mlp_lightning_manualopt': ['S2.1', 'O8', 'O23'],
}
score(__file__, ACCEPT)
