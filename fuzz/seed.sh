#!/usr/bin/env bash
# Seeds corpus/<target>/ with the small real files each reader sees (the bad-input corpus, the
# shared fixtures when they sit beside the checkout, the embedded playbook), so fuzzing starts
# from valid structure instead of from nothing. Files over 64 KiB (the fuzz max_len) are skipped.
set -u
cd "$(dirname "$0")"
seed() { # target, then files
  t=$1; shift
  mkdir -p "corpus/$t"
  for f in "$@"; do
    [ -f "$f" ] || continue
    [ "$(stat -c %s "$f")" -le 65536 ] || continue
    cp "$f" "corpus/$t/seed-$(echo "$f" | tr '/ ' '__' | tail -c 120)"
  done
}
B=../tests/bad_inputs
F=../../shared/fixtures
shopt -s globstar nullglob
seed safetensors $B/**/*.safetensors $F/**/*.safetensors
seed safetensors_index $B/**/*.index.json $F/**/*.index.json
seed torch_zip $B/**/*.pt $B/**/*.bin $F/**/*.pt $F/**/*.pth $F/**/*.bin
seed tfevents $B/**/events.out.tfevents.* $F/**/events.out.tfevents.*
# metrics_text picks its format from the first byte (0 trainer_state.json, 1 JSONL, 2 CSV).
mkdir -p corpus/metrics_text
i=0
for f in $B/**/*.json $F/**/trainer_state.json $B/**/*.jsonl $F/**/*.jsonl $B/**/*.csv $F/**/*.csv; do
  [ "$(stat -c %s "$f")" -le 65535 ] || continue
  case $f in *.json) sel='\x00' ;; *.jsonl) sel='\x01' ;; *) sel='\x02' ;; esac
  { printf "$sel"; cat "$f"; } > "corpus/metrics_text/seed-$i"
  i=$((i + 1))
done
# The pickle target gets the data.pkl inside each torch zip (python3's zipfile, when present).
mkdir -p corpus/pickle
if command -v python3 > /dev/null; then
  python3 - $B/**/*.pt $F/**/*.pt $F/**/*.pth $F/**/*.bin <<'PY'
import sys, zipfile
n = 0
for f in sys.argv[1:]:
    try:
        z = zipfile.ZipFile(f)
        pkls = [z.read(m) for m in z.namelist() if m.endswith(".pkl")]
    except Exception:
        pkls = []
    for d in pkls:
        if len(d) <= 65536:
            open("corpus/pickle/seed-%d.pkl" % n, "wb").write(d)
            n += 1
PY
fi
seed playbook_yaml ../playbook/*.yaml ../tests/bad_playbooks/**/*.yaml ../tests/bad_trees/**/*.yaml
for d in corpus/*; do echo "$d $(ls "$d" | wc -l) seeds"; done
# field_logs picks its format from the first byte (0 stdout log, 1 W&B record, 2 MLflow metric).
mkdir -p corpus/field_logs
T=../tests/field
i=0
for f in $T/**/*.log $T/**/*.out $B/**/*.log $B/**/*.out; do
  [ "$(stat -c %s "$f")" -le 65535 ] || continue
  { printf '\x00'; cat "$f"; } > "corpus/field_logs/seed-log-$i"; i=$((i + 1))
done
for f in $T/**/*.wandb $B/**/*.wandb; do
  [ "$(stat -c %s "$f")" -le 65535 ] || continue
  { printf '\x01'; cat "$f"; } > "corpus/field_logs/seed-wandb-$i"; i=$((i + 1))
done
for f in $T/**/metrics/*/* $T/**/metrics/*; do
  [ -f "$f" ] && [ "$(stat -c %s "$f")" -le 65535 ] || continue
  { printf '\x02'; cat "$f"; } > "corpus/field_logs/seed-mlflow-$i"; i=$((i + 1))
done
# dcp: a 4-byte little-endian length, the .metadata, then its first shard.
mkdir -p corpus/dcp
for d in ../tests/field/dcp_*/step_*; do
  m="$d/.metadata"; s="$d/__0_0.distcp"
  [ -f "$m" ] && [ -f "$s" ] || continue
  python3 -c "import struct,sys; m=open(sys.argv[1],'rb').read(); s=open(sys.argv[2],'rb').read(); sys.stdout.buffer.write(struct.pack('<I',len(m))+m+s)" "$m" "$s" > "corpus/dcp/seed-$(echo "$d" | tr '/.' '__')"
done
