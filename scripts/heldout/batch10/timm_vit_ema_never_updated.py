# timm: tiny VisionTransformer on synthetic 16x16 shape images, AdamW + timm cosine scheduler, model EMA
# kept for deployment, timm CheckpointSaver (state_dict + state_dict_ema + optimizer) and summary.csv.
import os, sys, logging, argparse
os.environ.setdefault("OMP_NUM_THREADS", "1")
import torch
from torch import nn
from torch.utils.data import TensorDataset, DataLoader
torch.set_num_threads(1); torch.manual_seed(0)
from timm.models.vision_transformer import VisionTransformer
from timm.utils import ModelEmaV3, CheckpointSaver, update_summary, AverageMeter, accuracy
from timm.scheduler import CosineLRScheduler
out = sys.argv[1]; os.makedirs(os.path.join(out, "checkpoints"), exist_ok=True)
logging.basicConfig(filename=os.path.join(out, "train.log"), level=logging.INFO, format="%(asctime)s %(message)s")
log = logging.getLogger("train")

def shapes(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 4, (n,), generator=g); X = 0.6 * torch.randn(n, 3, 16, 16, generator=g)
    for i in range(n):
        p = int(torch.randint(3, 13, (1,), generator=g)); c = int(y[i])
        if c == 0: X[i, :, p, :] += 1.2
        elif c == 1: X[i, :, :, p] += 1.2
        elif c == 2: X[i, :, range(16), range(16)] += 1.2
        else: X[i, :, p - 2:p + 2, p - 2:p + 2] += 1.2
    return X, y
X, y = shapes(3000, 0)
tr = DataLoader(TensorDataset(X[:2500], y[:2500]), batch_size=50, shuffle=True)
va = DataLoader(TensorDataset(X[2500:], y[2500:]), batch_size=250)
model = VisionTransformer(img_size=16, patch_size=4, in_chans=3, num_classes=4, embed_dim=48, depth=3, num_heads=3, mlp_ratio=2.0)
EPOCHS = 8
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.05)
sched = CosineLRScheduler(optimizer, t_initial=EPOCHS, warmup_t=1, warmup_lr_init=1e-4, lr_min=1e-5)
ema = ModelEmaV3(model, decay=0.99)
args = argparse.Namespace(model="vit_tiny_custom", lr=2e-3, epochs=EPOCHS, model_ema=True, model_ema_decay=0.99)
saver = CheckpointSaver(model, optimizer, args=args, model_ema=ema, checkpoint_dir=os.path.join(out, "checkpoints"),
                        recovery_dir=os.path.join(out, "checkpoints"), decreasing=True, max_history=3)
loss_fn = nn.CrossEntropyLoss()

def evaluate(m):
    m.eval(); L, A = AverageMeter(), AverageMeter()
    with torch.no_grad():
        for xb, yb in va:
            o = m(xb); L.update(loss_fn(o, yb).item(), len(xb)); A.update(accuracy(o, yb, topk=(1,))[0].item(), len(xb))
    return {"loss": L.avg, "top1": A.avg}

step = 0
for epoch in range(EPOCHS):
    model.train(); tl = AverageMeter()
    for i, (xb, yb) in enumerate(tr):
        loss = loss_fn(model(xb), yb)
        optimizer.zero_grad(); loss.backward(); optimizer.step(); step += 1
        tl.update(loss.item(), len(xb))
        if ema is not None and i == len(tr):   # update EMA at the end of each epoch
            ema.update(model, step=step)
        if i % 10 == 0:
            log.info(f"Train: {epoch} [{i:>3d}/{len(tr)}] Loss: {loss.item():.4f} ({tl.avg:.4f}) LR: {optimizer.param_groups[0]['lr']:.3e}")
    ev = evaluate(model)
    log.info(f"Test: epoch {epoch} Loss: {ev['loss']:.4f} Acc@1: {ev['top1']:.2f}")
    sched.step(epoch + 1)
    update_summary(epoch, {"loss": tl.avg}, ev, os.path.join(out, "summary.csv"), lr=optimizer.param_groups[0]["lr"], write_header=epoch == 0)
    best, best_epoch = saver.save_checkpoint(epoch, metric=ev["loss"])
log.info(f"*** Best metric: {best} (epoch {best_epoch})")
