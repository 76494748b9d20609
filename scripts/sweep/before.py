"""Run `mltriage check RUN --json` on every run of a sweep and write a Markdown summary: per
run the fail / warn counts and the findings (id, probe, measured), then the findings that
fire most often. Standard library only.

    python3 before.py /tmp/mltriage-before /work/sweep-full ["which build this is"] > BEFORE.md
"""
import json
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path


def main():
    exe, root = sys.argv[1], Path(sys.argv[2])
    answers = json.loads((root / "answers.json").read_text())
    rows, per_id, errors = [], defaultdict(set), []
    t0 = time.time()
    for run in sorted(answers):
        p = subprocess.run([exe, "check", str(root / run), "--json"], capture_output=True,
                           text=True)
        try:
            rep = json.loads(p.stdout)
        except json.JSONDecodeError:
            errors.append((run, p.returncode, p.stderr.strip()[:300]))
            continue
        bad = [f for f in rep["findings"] if f["status"] in ("fail", "warn")]
        for f in bad:
            per_id[(f["status"], f["id"], f["probe"])].add(run)
        rows.append((run, answers[run]["profile"], bad))
    n = len(rows)
    clean = sum(1 for _, _, b in rows if not b)
    out = []
    out.append("# Healthy sweep: what `mltriage check` draws before the run-profile work\n")
    out.append(f"`{Path(exe).name} check RUN --json` on the {len(answers)} healthy runs of "
               f"`{root}` (made by `scripts/sweep/healthy_sweep.py`; every run is healthy, so "
               f"every fail or warn below is a false alarm). {time.time() - t0:.0f} s in all.\n")
    if len(sys.argv) > 3:
        out.append(sys.argv[3] + "\n")
    out.append(f"- **{clean}/{n} runs clean** (0 fail, 0 warn)")
    out.append(f"- {sum(1 for _, _, b in rows if any(f['status'] == 'fail' for f in b))} runs with "
               f"at least one fail, {sum(1 for _, _, b in rows if b and all(f['status'] == 'warn' for f in b))} "
               f"with warns only")
    if errors:
        out.append(f"- {len(errors)} runs where check gave no JSON: " +
                   ", ".join(f"{r} (rc {rc}: {e})" for r, rc, e in errors))
    out.append("\n## Findings by id (runs drawing it)\n")
    out.append("| status | id | probe | runs | where (phase/init[/resumed]: runs) | e.g. |")
    out.append("|---|---|---|---:|---|---|")
    prof = {run: p for run, p, _ in rows}
    for (st, fid, probe), runs in sorted(per_id.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        eg = ", ".join(sorted(runs)[:3]) + (" …" if len(runs) > 3 else "")
        where = Counter(f"{prof[r]['phase']}/{prof[r]['init']}" +
                        ("/resumed" if prof[r]["resumed_at"] is not None else "") for r in runs)
        w = ", ".join(f"{k}: {v}" for k, v in where.most_common())
        out.append(f"| {st} | {fid} | {probe} | {len(runs)} | {w} | {eg} |")
    out.append("\n## By framework\n")
    out.append("| framework | runs | clean | with fail | with warn only |")
    out.append("|---|---:|---:|---:|---:|")
    fw = defaultdict(Counter)
    for run, prof, bad in rows:
        c = fw[prof["framework"]]
        c["runs"] += 1
        c["clean"] += not bad
        c["fail"] += any(f["status"] == "fail" for f in bad)
        c["warn"] += bool(bad) and all(f["status"] == "warn" for f in bad)
    for k, c in sorted(fw.items()):
        out.append(f"| {k} | {c['runs']} | {c['clean']} | {c['fail']} | {c['warn']} |")
    out.append("\n## Per run\n")
    out.append("| run | phase / init / resumed | fail | warn | findings (status id probe: measured) |")
    out.append("|---|---|---:|---:|---|")
    for run, prof, bad in rows:
        nf = sum(f["status"] == "fail" for f in bad)
        nw = len(bad) - nf
        what = "<br>".join(
            f"{f['status']} {f['id']} {f['probe']}: {str(f.get('measured', '')).replace('|', '/')[:160]}"
            for f in bad)
        res = f" / resumed@{prof['resumed_at']}" if prof["resumed_at"] is not None else ""
        out.append(f"| {run} | {prof['phase']} / {prof['init']}{res} | {nf} | {nw} | {what} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
