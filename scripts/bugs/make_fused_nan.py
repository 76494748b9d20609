"""Test data for nonfinite_weights' O11 branch (probes/tests/data/fused_nan/): a tiny AdamW
(fused=True) run on CPU with finite logged grad norms and checkpoints (model.safetensors +
optimizer.pt) at steps 10 and 20. In `bug` four weights of the step-20 checkpoint are set to NaN —
what a fused step that went wrong leaves behind (no CPU run produces it on demand); `twin` is the
same run untouched. Usage: /work/venv-field/bin/python scripts/bugs/make_fused_nan.py
"""
import json, os, shutil

import torch
from safetensors.torch import save_file

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "probes", "tests", "data", "fused_nan")
torch.manual_seed(0)
shutil.rmtree(ROOT, ignore_errors=True)
for name, nan in (("bug", True), ("twin", False)):
    out = os.path.join(ROOT, name)
    os.makedirs(out)
    net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, fused=True)
    x = torch.randn(64, 8)
    y = (x[:, 0] > 0).long()
    with open(os.path.join(out, "metrics.jsonl"), "w") as f:
        for step in range(1, 21):
            loss = torch.nn.functional.cross_entropy(net(x), y)
            opt.zero_grad(); loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(net.parameters(), float("inf"))
            opt.step()
            f.write(json.dumps({"step": step, "loss": loss.item(), "grad_norm": gn.item()}) + "\n")
            if step in (10, 20):
                sd = {k: v.detach().clone() for k, v in net.state_dict().items()}
                if nan and step == 20:
                    sd["2.weight"][0, :4] = float("nan")
                ck = os.path.join(out, f"checkpoint-{step}")
                os.makedirs(ck)
                save_file(sd, os.path.join(ck, "model.safetensors"))
                torch.save(opt.state_dict(), os.path.join(ck, "optimizer.pt"))
