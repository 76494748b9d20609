"""Score the batch-4 held-out runs: python3 score.py OUT_DIR [MLTRIAGE].

Each healthy run must be clean (0 fail, 0 warn); a bugged run is *named* when one of the entries
below (chosen from the bug's description before the runs were scored) is a fail or warn.
OUT_DIR holds runs/ (scripts/heldout/batch4/run_all.sh OUT_DIR) and reads answers.json beside
this script."""
import os, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
from score_batch import score  # noqa: E402

# Entries that explain each bug, written from the bug descriptions before the runs were scored
# (the lr-too-high run accepts what every lr x100 field run does).
ACCEPT = {
    'bars6_cnn_uint8': ['V1', 'F12', 'S4.2'],
    'tabular8_mlp_p05': ['O5', 'S4.2'],
    'digits_cnn_lightning_tb': ['V1', 'S4.2'],
    'color_shapes_cnn': ['V1', 'F12', 'S4.2'],
    'intent_tinybert': ['F12', 'F13', 'S4.2'],
    'news_topic_tinybert': ['S4.1', 'S3.1', 'S3.2', 'F19', 'O22'],
    'digits_keras_mlp': ['F12', 'F13'],
}
score(__file__, ACCEPT)
