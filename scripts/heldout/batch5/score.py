"""Score the batch-5 held-out runs: python3 score.py OUT_DIR [MLTRIAGE].

Each healthy run must be clean (0 fail, 0 warn); a bugged run is *named* when one of the entries
below (chosen from the bug's description before the runs were scored) is a fail or warn.
OUT_DIR holds runs/ (scripts/heldout/batch5/run_all.sh OUT_DIR) and reads answers.json beside
this script."""
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from score_batch import score  # noqa: E402

# Entries that explain each bug, written from the bug descriptions before the runs were scored
# (the lr-too-high run accepts what every lr x100 field run does).
ACCEPT = {
    'digitstream_gpt2_grpo': ['H5', 'R1'],
    'colorblocks_yolov8t': ['V3', 'V4', 'F12', 'F13'],
    'cartpole_ppo_shaped': ['R1', 'R3', 'R7'],
    'digits16_cnn_ignite': ['S4.1', 'S3.1', 'S3.2', 'F19', 'O22'],
    'shapes24_bncnn_lightning': ['S3.1', 'S3.2', 'S4.1', 'S4.2', 'F19', 'O22'],
    'textures24_effnet_timm': ['S2.1', 'O8', 'O23'],
    'colourshapes_cnn_keras_ft': ['O2', 'O19'],
}
score(__file__, ACCEPT)
