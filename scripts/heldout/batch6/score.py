"""Score the batch-6 held-out runs: python3 score.py OUT_DIR [MLTRIAGE].

Each healthy run must be clean (0 fail, 0 warn); a bugged run is *named* when one of the entries
below (chosen from the bug's description before the runs were scored) is a fail or warn.
OUT_DIR holds runs/ (scripts/heldout/batch6/run_all.sh OUT_DIR) and reads answers.json beside
this script."""
import json, os, subprocess, sys

root = sys.argv[1]
exe = sys.argv[2] if len(sys.argv) > 2 else 'target/release/mltriage'
ans = json.load(open(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'answers.json')))
# Entries that explain each bug, written from the bug descriptions before the runs were scored
# (the lr-too-high run accepts what every lr x100 field run does).
ACCEPT = {
    'colorboxes_yolov8tiny_scratch': ['V3', 'V4', 'F12', 'F13'],
    'blobs10_relu_mlp4': ['S4.1', 'S3.1', 'S3.2', 'F19', 'O22', 'O25'],
    'clusters8_mlp_ignite_sgd': ['O2', 'O4', 'S4.1'],
    'fruitlist_gpt2tiny_grpo': ['H5', 'R1'],
    'tabular5_mlp_lightning_manualopt': ['S2.1', 'O8', 'O23'],
}
h = hc = b = bn = b1 = 0
for name in sorted(ans):
    r = subprocess.run([exe, 'check', '--json', f'{root}/runs/{name}'], capture_output=True, text=True)
    d = json.loads(r.stdout)
    bad = [(f['id'], f['status'], f['probe']) for f in d['findings'] if f['status'] in ('fail', 'warn')]
    shown = ', '.join(f'{s} {i}[{p}]' for i, s, p in bad)
    if ans[name]['healthy']:
        h += 1
        hc += not bad
        print('ok ' if not bad else 'XX ', 'HEALTHY', name, '|', shown)
    else:
        b += 1
        acc = ACCEPT[name]
        named = any(i in acc for i, _, _ in bad)
        bn += named
        b1 += bool(bad) and bad[0][0] in acc
        print('ok ' if named else 'XX ', 'BUG    ', name, '|', shown, '| want', acc)
print(f'healthy clean {hc}/{h}; bugs named {bn}/{b} ({b1} first)')
