#!/usr/bin/env python3
"""Generate the held-out corpus of HEALTHY training runs.

    /work/venv-field/bin/python scripts/heldout/make_heldout.py --out tests/heldout

Every run is real training code driving a real framework (HF Trainer, TRL,
Lightning, accelerate, plain PyTorch, stable-baselines3, timm) on tiny models
and synthetic data; each run folder is exactly what the framework wrote.
DIR/answers.json holds the true profile of each run. Nothing is injected:
every run is a correct setup that learns.

Families run as separate worker processes (global state such as accelerate's
AcceleratorState must not leak between frameworks), --jobs at a time.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep scripts/heldout free of __pycache__
HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = ["hf", "trl", "plain", "lit", "sb3", "timm", "accel"]  # longest first
MODULES = {"hf": "hf_runs", "trl": "trl_runs", "lit": "lit_runs", "accel": "accel_runs", "plain": "plain_runs",
           "sb3": "sb3_runs", "timm": "timm_runs"}
# torchvision (needed by timm) has no wheel matching this torch on PyPI; its
# pure-Python parts are enough for timm, installed with
#   pip install --no-deps --target /work/heldout-deps torchvision
EXTRA_PATH = os.environ.get("HELDOUT_EXTRA_PATH", "/work/heldout-deps")


def worker(family, out, only):
    sys.path.insert(0, HERE)
    if os.path.isdir(EXTRA_PATH):
        sys.path.append(EXTRA_PATH)
    import importlib
    import common  # noqa: F401  (sets threads / offline env)
    mod = importlib.import_module(MODULES[family])
    answers = mod.main(out, only=only or None)
    common.write_partial(out, family, answers)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--family", action="append", choices=FAMILIES, help="only these families (repeatable)")
    ap.add_argument("--only", action="append", default=[], help="only these run names (repeatable)")
    ap.add_argument("--worker", choices=FAMILIES, help=argparse.SUPPRESS)
    a = ap.parse_args()
    out = os.path.abspath(a.out)
    if a.worker:
        worker(a.worker, out, a.only)
        return

    families = a.family or FAMILIES
    partial = bool(a.family or a.only)
    ans_path = os.path.join(out, "answers.json")
    if os.path.isdir(out) and os.listdir(out) and not os.path.exists(ans_path):
        sys.exit(f"refusing to write into non-empty {out} that has no answers.json")
    if not partial and os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out, exist_ok=True)

    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false", PYTHONDONTWRITEBYTECODE="1", WANDB_DISABLED="true", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONWARNINGS="ignore", TRANSFORMERS_VERBOSITY="error", HF_DATASETS_DISABLE_PROGRESS_BARS="1")
    logdir = tempfile.mkdtemp(prefix="heldout_logs_")
    t0 = time.time()
    pending, running, failed = list(families), {}, []
    while pending or running:
        while pending and len(running) < a.jobs:
            fam = pending.pop(0)
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", fam, "--out", out]
            for o in a.only:
                cmd += ["--only", o]
            log = open(os.path.join(logdir, fam + ".log"), "w")
            running[fam] = (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=out), log,
                            time.time())
        time.sleep(0.5)
        for fam, (p, log, ts) in list(running.items()):
            if p.poll() is None:
                continue
            log.close()
            del running[fam]
            print(f"[{time.time() - t0:6.1f}s] {fam}: {'ok' if p.returncode == 0 else 'FAILED'} "
                  f"({time.time() - ts:.0f}s)", flush=True)
            if p.returncode != 0:
                failed.append(fam)
                with open(os.path.join(logdir, fam + ".log")) as f:
                    print("".join(f.readlines()[-40:]), file=sys.stderr)

    answers = {}
    if partial and os.path.exists(ans_path):
        with open(ans_path) as f:
            answers = json.load(f)
    for fam in families:
        p = os.path.join(out, f".answers_{fam}.json")
        if os.path.exists(p):
            with open(p) as f:
                answers.update(json.load(f))
            os.remove(p)
    with open(ans_path, "w") as f:
        json.dump(dict(sorted(answers.items())), f, indent=1)
        f.write("\n")
    stray = [d for d in os.listdir(out) if os.path.isdir(os.path.join(out, d)) and d not in answers]
    if failed:
        print(f"worker logs kept in {logdir}")
    else:
        shutil.rmtree(logdir, ignore_errors=True)
    print(f"{len(answers)} runs in {out} ({time.time() - t0:.0f}s)")
    if stray:
        print("WARNING: folders without answers:", stray)
    if failed:
        sys.exit(f"failed families: {failed}")


if __name__ == "__main__":
    main()
