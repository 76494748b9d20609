#!/usr/bin/env bash
# Retake the README's screenshots: drive the TUI on the demo run in a detached tmux session
# (100×30), save each screen's text to assets/screens/N-name.txt, then render the PNGs with
# scripts/render_screens.py (Pillow + DejaVu fonts). Usage: scripts/capture_screens.sh [BIN] [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/mltriage}
PY=${2:-python3}
OUT=assets/screens
SOCK=mltriage-screens-$$
CFG=$(mktemp -d)
t() { tmux -L "$SOCK" -f /dev/null "$@"; }
cap() { sleep "${2:-1.5}"; t capture-pane -p -t s > "$OUT/$1.txt"; }
trap 't kill-server 2>/dev/null || true; rm -rf "$CFG"' EXIT
# A first launch shows the getting-started overlay: mark it seen (XDG config) by opening once.
t new-session -d -s s -x 100 -y 30 "XDG_CONFIG_HOME=$CFG $BIN assets/demo-run"
sleep 2; t send-keys -t s Escape
cap 1-home 2
t send-keys -t s -l "/"; t send-keys -t s -l "mAP zero"
cap 2-search
t send-keys -t s Escape; t send-keys -t s -l "/"; t send-keys -t s C-u; t send-keys -t s -l "mAP is zero"; sleep 1
t send-keys -t s Enter
cap 3-entry-V3
t send-keys -t s Escape; t send-keys -t s Escape
t send-keys -t s -l ":walk stability"; t send-keys -t s Enter
cap 4-walk-q1_1 3
t send-keys -t s Enter; sleep 2; t send-keys -t s Enter
cap 5-walk-conclusion 3
t send-keys -t s Escape; t send-keys -t s Escape; t send-keys -t s -l "r"
cap 6-run 3
t send-keys -t s -l "q"
"$PY" scripts/render_screens.py "$OUT"
echo "retook $(ls $OUT/*.txt | wc -l) screens in $OUT"
