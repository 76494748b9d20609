"""Regenerates tests/field/capture_hf_tiny: a tiny GPT-2 trained from scratch by the HF
Trainer for 6 steps with mltriage.capture.HFCallback — the captured run that
tests/capture_check.rs (CI has no torch) holds the batch probes to.

    /work/venv-field/bin/python python/tests/make_capture_fixture.py
"""

import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import test_capture as t  # noqa: E402
from mltriage import capture  # noqa: E402

out = os.path.join(t.ROOT, "tests", "field", "capture_hf_tiny")
shutil.rmtree(out, ignore_errors=True)
t.hf_train(out, [capture.HFCallback(from_scratch=True, phase="pretrain")], steps=6, save_steps=6)
# What a run folder keeps: no RNG state (14 KB of no use to any probe).
for root, _, files in os.walk(out):
    for f in files:
        if f.startswith("rng_state"):
            os.remove(os.path.join(root, f))
print(out)
