"""Render the tmux captures in assets/screens/*.txt to PNG (needs Pillow and DejaVu fonts).
Captures come from: tmux new-session -d -x 100 -y 30 'mltriage assets/demo-run'; tmux capture-pane -p."""
import glob, os, sys
from PIL import Image, ImageDraw, ImageFont

D = "/usr/share/fonts/truetype/dejavu/"
mono, sans = ImageFont.truetype(D + "DejaVuSansMono.ttf", 14), ImageFont.truetype(D + "DejaVuSans.ttf", 14)
cw, lh = mono.getbbox("M")[2], 18
for f in sorted(glob.glob(os.path.join(sys.argv[1] if len(sys.argv) > 1 else "assets/screens", "*.txt"))):
    lines = open(f, encoding="utf-8").read().rstrip("\n").split("\n")
    img = Image.new("RGB", (max(map(len, lines)) * cw + 20, len(lines) * lh + 20), "#1e1e1e")
    d = ImageDraw.Draw(img)
    for i, l in enumerate(lines):
        for j, ch in enumerate(l):
            if ch != " ":
                col = {"✗": "#ff6b6b", "✓": "#7bd88f"}.get(ch, "#ffd166" if l[j:j + 6] == "! warn" else "#e0e0e0")
                d.text((10 + j * cw, 10 + i * lh), ch, font=sans if 0x2800 <= ord(ch) <= 0x28FF else mono, fill=col)
    img.save(f[:-4] + ".png", optimize=True)
