"""Score `mltriage check` over the field corpus: per run, fail/warn counts, whether an accepted
id is named by a fail or warn (and whether it is first), per framework totals.
Usage: python3 scripts/field/score.py [path/to/mltriage] [--corpus tests/field] [--json]
Needs only the Python standard library."""
import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def framework(run):
    return run.split("_")[0]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    exe = args[0] if args else str(REPO / "target" / "debug" / "mltriage")
    corpus = REPO / "tests" / "field"
    if "--corpus" in sys.argv:
        corpus = Path(sys.argv[sys.argv.index("--corpus") + 1])
    answers = json.loads((corpus / "answers.json").read_text())
    rows, per = [], defaultdict(lambda: {"healthy": 0, "healthy_clean": 0, "healthy_fail": 0,
                                         "healthy_warn": 0, "bugged": 0, "named": 0, "first": 0})
    for run, ans in answers.items():
        cmd = [exe, "check", str(corpus / run), "--json"]
        for k, v in ans["facts"].items():
            cmd += ["--fact", f"{k}={v}"]
        p = subprocess.run(cmd, capture_output=True, text=True)
        try:
            rep = json.loads(p.stdout)
            finds = [f for f in rep["findings"] if f["status"] in ("fail", "warn")]
        except (json.JSONDecodeError, KeyError):
            rows.append((run, "ERROR", p.stderr.strip()[:200]))
            continue
        nf = sum(f["status"] == "fail" for f in finds)
        nw = len(finds) - nf
        f = per[framework(run)]
        if not ans["accept"]:
            f["healthy"] += 1
            f["healthy_fail"] += nf
            f["healthy_warn"] += nw
            f["healthy_clean"] += nf == 0 and nw == 0
            rows.append((run, f"healthy fail={nf} warn={nw}",
                         "; ".join(f"{x['status']} {x['id']} ({x['probe']})" for x in finds)))
        else:
            f["bugged"] += 1
            ids = [x["id"] for x in finds]
            hit = any(i in ans["accept"] for i in ids)
            first = bool(ids) and ids[0] in ans["accept"]
            f["named"] += hit
            f["first"] += first
            rows.append((run, f"bug {'NAMED' if hit else 'missed'}{' first' if first else ''} "
                              f"fail={nf} warn={nw}",
                         "; ".join(f"{x['status']} {x['id']} ({x['probe']})" for x in finds)))
    if "--json" in sys.argv:
        print(json.dumps({"runs": rows, "frameworks": per}, indent=1))
        return
    for r in rows:
        print(f"{r[0]:36} {r[1]:28} {r[2][:300]}")
    print()
    print(f"{'framework':12} healthy(clean/n, fail, warn)  bugged(named/n, first)")
    for k, v in sorted(per.items()):
        print(f"{k:12} {v['healthy_clean']}/{v['healthy']} f={v['healthy_fail']} w={v['healthy_warn']}"
              f"      {v['named']}/{v['bugged']} first={v['first']}")


if __name__ == "__main__":
    main()
