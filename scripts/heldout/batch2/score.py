"""Score the batch-2 held-out runs: python3 score.py OUT_DIR [MLTRIAGE]: each healthy run must be clean (0 fail, 0 warn), each bugged run must draw a fail or warn."""
import json,subprocess,sys
root=sys.argv[1]; exe=sys.argv[2] if len(sys.argv)>2 else 'target/release/mltriage'
ans=json.load(open(root+'/answers.json'))
for run,a in sorted(ans.items()):
    d=json.loads(subprocess.run([exe,'check','--json',f'{root}/runs/{run}'],capture_output=True,text=True).stdout)
    bad=[f"{f['status']} {f['id']}[{f['probe']}]" for f in d['findings'] if f['status'] in('fail','warn')]
    tag='HEALTHY' if a['healthy'] else 'BUG    '
    ok = (not bad) if a['healthy'] else bool(bad)
    print(('ok ' if ok else 'XX '), tag, run, '|', ', '.join(bad)[:150], '' if a['healthy'] else '| '+(a['bug'] or '')[:70])
