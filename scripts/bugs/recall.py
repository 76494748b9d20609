"""Recall and top-1 of `mltriage check` over the WHOLE corpus: tests/field, /work/shared/fixtures
(or ../shared/fixtures) and every tests/bugs/*/answers.json. A bugged run is named when one of its
accepted ids is a fail or warn, top-1 when the first fail/warn is; a healthy twin is clean at
0 fail and 0 warn.
Usage: python3 scripts/bugs/recall.py [path/to/mltriage]   (standard library only)"""
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def corpora():
    out = [REPO / "tests" / "field" / "answers.json"]
    for shared in (REPO / ".." / "shared" / "fixtures", Path("/work/shared/fixtures")):
        if (shared / "answers.json").is_file():
            out.append(shared / "answers.json")
            break
    out += sorted((REPO / "tests" / "bugs").glob("*/answers.json"))
    out.append(REPO / "tests" / "sweep" / "answers.json")  # the healthy sweep's fast subset
    return [p for p in out if p.is_file()]


def main():
    exe = sys.argv[1] if len(sys.argv) > 1 else str(REPO / "target" / "debug" / "mltriage")
    tot = {"bugged": 0, "named": 0, "first": 0, "healthy": 0, "clean": 0}
    frameworks = {}  # field corpus runs by the framework their name starts with
    misses, dirty = [], []
    for ans_path in corpora():
        answers = json.loads(ans_path.read_text())
        per = {"bugged": 0, "named": 0, "first": 0, "healthy": 0, "clean": 0}
        for run, ans in answers.items():
            cmd = [exe, "check", str(ans_path.parent / run), "--json"]
            for k, v in (ans.get("facts") or {}).items():
                cmd += ["--fact", f"{k}={v}"]
            p = subprocess.run(cmd, capture_output=True, text=True)
            try:
                finds = [f for f in json.loads(p.stdout)["findings"]
                         if f["status"] in ("fail", "warn")]
            except (json.JSONDecodeError, KeyError):
                finds = None
            ids = [f["id"] for f in finds or []]
            fw = frameworks.setdefault(run.split("_")[0], dict.fromkeys(tot, 0)) \
                if ans_path.parent.name == "field" else {}
            if not ans["accept"]:
                fw["healthy"] = fw.get("healthy", 0) + 1
                fw["clean"] = fw.get("clean", 0) + (finds == [])
                per["healthy"] += 1
                if finds == []:
                    per["clean"] += 1
                else:
                    dirty.append(f"{run}: {ids if finds is not None else 'ERROR'}")
            else:
                per["bugged"] += 1
                hit = any(i in ans["accept"] for i in ids)
                per["named"] += hit
                per["first"] += bool(ids) and ids[0] in ans["accept"]
                fw["bugged"] = fw.get("bugged", 0) + 1
                fw["named"] = fw.get("named", 0) + hit
                fw["first"] = fw.get("first", 0) + (bool(ids) and ids[0] in ans["accept"])
                if not hit:
                    misses.append(f"{run}: want {ans['accept']}, got {ids}")
        rel = ans_path.parent.relative_to(REPO) if REPO in ans_path.parents else ans_path.parent
        print(f"{str(rel):32} bugs {per['named']}/{per['bugged']} named, {per['first']} top-1; "
              f"healthy {per['clean']}/{per['healthy']} clean")
        for k in tot:
            tot[k] += per[k]
    b = max(tot["bugged"], 1)
    print(f"{'TOTAL':32} recall {tot['named']}/{tot['bugged']} = {100 * tot['named'] / b:.1f}%, "
          f"top-1 {tot['first']}/{tot['bugged']} = {100 * tot['first'] / b:.1f}%; "
          f"healthy clean {tot['clean']}/{tot['healthy']}")
    if frameworks:
        print("field corpus per framework:")
        for name, f in sorted(frameworks.items()):
            print(f"  {name:12} bugs {f['named']}/{f['bugged']} named, {f['first']} top-1; "
                  f"healthy {f['clean']}/{f['healthy']} clean")
    for m in misses:
        print("  missed", m)
    for d in dirty:
        print("  not clean", d)


if __name__ == "__main__":
    main()
