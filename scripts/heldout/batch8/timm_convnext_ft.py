# timm fine-tune of a small ConvNeXt onto a 5-class synthetic image task; outputs laid out like
# timm's train.py (args.yaml, summary.csv, checkpoint-E.pth.tar, last.pth.tar, model_best.pth.tar).
import os, sys, yaml, argparse, torch
torch.set_num_threads(1)
import timm
from timm.optim import create_optimizer_v2
from timm.scheduler import create_scheduler_v2
from timm.utils import CheckpointSaver, update_summary, accuracy, AverageMeter, random_seed
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
args = argparse.Namespace(model="test_convnext", num_classes=5, img_size=32, batch_size=32, epochs=6, opt="adamw",
                          lr=1e-3, weight_decay=0.05, sched="cosine", warmup_epochs=1, seed=0, output=out,
                          experiment="convnext_synth5", eval_metric="top1")
random_seed(0)
with open(os.path.join(out, "args.yaml"), "w") as f: yaml.safe_dump(vars(args), f)
# base model with its original 1000-class head (randomly initialised here; no network access)
model = timm.create_model(args.model, pretrained=False, num_classes=1000)
optimizer = create_optimizer_v2(model, opt=args.opt, lr=args.lr, weight_decay=args.weight_decay)
model.reset_classifier(args.num_classes)   # new 5-class head for the downstream task
lr_scheduler, num_epochs = create_scheduler_v2(optimizer, sched=args.sched, num_epochs=args.epochs,
                                               warmup_epochs=args.warmup_epochs, warmup_lr=1e-5)
g = torch.Generator().manual_seed(0)
protos = torch.randn(args.num_classes, 3, 8, 8, generator=g)
def make(n):
    y = torch.randint(0, args.num_classes, (n,), generator=g)
    x = torch.nn.functional.interpolate(protos[y], size=32, mode="bilinear") + 2.0 * torch.randn(n, 3, 32, 32, generator=g)
    return torch.utils.data.TensorDataset(x, y)
tr = torch.utils.data.DataLoader(make(640), batch_size=args.batch_size, shuffle=True, generator=torch.Generator().manual_seed(1))
va = torch.utils.data.DataLoader(make(320), batch_size=64)
crit = torch.nn.CrossEntropyLoss()
saver = CheckpointSaver(model=model, optimizer=optimizer, args=args, checkpoint_dir=out, recovery_dir=out,
                        decreasing=False, max_history=2)
for epoch in range(num_epochs):
    model.train(); lm = AverageMeter()
    for x, y in tr:
        loss = crit(model(x), y); optimizer.zero_grad(); loss.backward(); optimizer.step(); lm.update(loss.item(), x.size(0))
    lr_scheduler.step(epoch + 1)
    model.eval(); vl, vt = AverageMeter(), AverageMeter()
    with torch.no_grad():
        for x, y in va:
            o = model(x); vl.update(crit(o, y).item(), x.size(0)); vt.update(accuracy(o, y, topk=(1,))[0].item(), x.size(0))
    ev = {"loss": vl.avg, "top1": vt.avg}
    update_summary(epoch, {"loss": lm.avg}, ev, os.path.join(out, "summary.csv"),
                   lr=optimizer.param_groups[0]["lr"], write_header=epoch == 0)
    best, best_ep = saver.save_checkpoint(epoch, metric=ev["top1"])
    print(f"epoch {epoch} train_loss {lm.avg:.4f} val_loss {vl.avg:.4f} top1 {vt.avg:.2f}")
print("best", best, best_ep)
