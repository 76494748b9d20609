"""Evidence of absence (issue 27): a conv + BatchNorm classifier trained with the model left in
eval mode — BatchNorm's running statistics never update (mean 0, var 1, num_batches_tracked 0)
while every weight moves — beside the same run in train mode.
art_bn_trained_in_eval (O5)  model.eval() called once before the training loop
art_bn_trained_in_train      the same loop with model.train()
Writes under tests/bugs/art/<run>/ and merges tests/bugs/art/answers.json.
Usage: /work/venv-field/bin/python scripts/bugs/art_bn_trained_in_eval.py
"""
import json
import os
import shutil

import torch
from safetensors.torch import save_file

torch.set_num_threads(1)
ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "bugs", "art")


def run(name, eval_mode):
    out = os.path.join(ROOT, name)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 3, 8, 8, generator=g)
    y = (x[:, 0].mean((1, 2)) > 0).long() + 2 * (x[:, 1].mean((1, 2)) > 0).long()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.Conv2d(8, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.eval() if eval_mode else model.train()
    logs = []
    for step in range(1, 301):
        i = torch.randint(0, 512, (32,), generator=g)
        loss = torch.nn.functional.cross_entropy(model(x[i]), y[i])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            logs.append({"step": step, "loss": round(loss.item(), 5)})
        if step % 150 == 0:
            d = os.path.join(out, f"checkpoint-{step}")
            os.makedirs(d)
            save_file({k: v.detach().clone().contiguous() for k, v in model.state_dict().items()},
                      os.path.join(d, "model.safetensors"))
    with open(os.path.join(out, "metrics.jsonl"), "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in logs)
    assert logs[-1]["loss"] < 0.8 * logs[0]["loss"], logs[::10]


def record(name, bug, accept):
    path = os.path.join(ROOT, "answers.json")
    data = json.load(open(path)) if os.path.exists(path) else {}
    data[name] = {"accept": accept, "facts": {}, "made_by": f"torch {torch.__version__}",
                  "bug": bug, "profile": {"framework": "plain", "resumed_at": None,
                                          "init_checkpoint": False}}
    with open(path, "w") as f:
        f.write(json.dumps(dict(sorted(data.items())), indent=2) + "\n")


if __name__ == "__main__":
    run("art_bn_trained_in_eval", True)
    record("art_bn_trained_in_eval", "model.eval() before the training loop: BatchNorm never "
           "updates its running statistics", ["O5"])
    run("art_bn_trained_in_train", False)
    record("art_bn_trained_in_train", None, [])
