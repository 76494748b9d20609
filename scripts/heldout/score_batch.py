"""The scorer every held-out batch's score.py calls: healthy runs must be clean (0 fail, 0 warn);
a bugged run is *named* when one of the entries its batch's ACCEPT lists is a fail or warn.
Usage (from a batch's score.py): score(__file__, ACCEPT) with argv OUT_DIR [MLTRIAGE]."""
import json, os, subprocess, sys


def score(script, accept):
    root = sys.argv[1]
    exe = sys.argv[2] if len(sys.argv) > 2 else 'target/release/mltriage'
    ans = json.load(open(os.path.join(os.path.dirname(os.path.abspath(script)), 'answers.json')))
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
            acc = accept[name]
            named = any(i in acc for i, _, _ in bad)
            bn += named
            b1 += bool(bad) and bad[0][0] in acc
            print('ok ' if named else 'XX ', 'BUG    ', name, '|', shown, '| want', acc)
    print(f'healthy clean {hc}/{h}; bugs named {bn}/{b} ({b1} first)')
