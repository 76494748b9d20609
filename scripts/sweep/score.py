"""Score `mltriage check` over a healthy sweep: every run must give 0 fail and 0 warn, and its
profile must be right or unknown (the rules of tests/profile_check.rs).
Usage: python3 scripts/sweep/score.py path/to/mltriage SWEEP_DIR   (standard library only)"""
import collections
import json
import subprocess
import sys
from pathlib import Path

FAMILY = {"pretrain": "lm", "sft": "lm", "vlm": "lm", "grpo": "policy", "ppo": "policy"}


def profile_errors(name, p, want):
    errs = []
    t = want.get("phase")
    if t:
        got, sure = p["phase"]["value"], p["phase"]["sure"]
        if not (got in ("unknown", t) or (sure in ("low", "none") and FAMILY.get(got, got) == FAMILY.get(t, t))):
            errs.append(f"phase {got} (truth {t})")
    t = want.get("init")
    if t and p["init"]["value"] not in ("unknown", t):
        errs.append(f"init {p['init']['value']} (truth {t})")
    if "resumed_at" in want:
        t, got = want["resumed_at"], p["resumed_at"]["value"]
        slack = 2 * max(1, p["logging"].get("interval") or 1)
        unknown = got is None and p["resumed_at"]["sure"] == "none"  # nothing said either way
        if unknown and t is not None:
            pass
        elif (t is None) != (got is None) or (t is not None and abs(t - got) > slack):
            errs.append(f"resumed_at {got} (truth {t})")
    if "init_checkpoint" in want and p["checkpoints"]["init"] != want["init_checkpoint"]:
        errs.append(f"init_checkpoint {p['checkpoints']['init']} (truth {want['init_checkpoint']})")
    for k in ("framework", "precision"):
        if want.get(k) and p[k]["value"] not in ("unknown", want[k]):
            errs.append(f"{k} {p[k]['value']} (truth {want[k]})")
    return errs


def main():
    exe, root = sys.argv[1], Path(sys.argv[2])
    answers = json.loads((root / "answers.json").read_text())
    clean, dirty, wrong = 0, [], []
    by_probe = collections.Counter()
    for run, ans in sorted(answers.items()):
        cmd = [exe, "check", str(root / run), "--json"]
        for k, v in (ans.get("facts") or {}).items():
            cmd += ["--fact", f"{k}={v}"]
        out = subprocess.run(cmd, capture_output=True, text=True)
        try:
            d = json.loads(out.stdout)
        except json.JSONDecodeError:
            dirty.append(f"{run}: no report ({out.stderr.strip()[:120]})")
            continue
        bad = [f for f in d["findings"] if f["status"] in ("fail", "warn")]
        if bad:
            dirty.append(f"{run}: " + ", ".join(f"{f['status']} {f['id']} [{f['probe']}]" for f in bad))
            by_probe.update(f["probe"] for f in bad)
        else:
            clean += 1
        errs = profile_errors(run, d["profile"], ans.get("profile") or {}) if "profile" in d else ["no profile (an older build)"]
        if errs:
            wrong.append(f"{run}: " + "; ".join(errs))
    n = len(answers)
    print(f"healthy sweep {root}: {clean}/{n} clean (0 fail, 0 warn); profile right or unknown on {n - len(wrong)}/{n}")
    for line in dirty:
        print("  dirty", line)
    for line in wrong:
        print("  profile", line)
    if by_probe:
        print("  alarms by probe:", dict(by_probe.most_common()))


if __name__ == "__main__":
    main()
