# Plain PyTorch CNN (SGD + momentum + BatchNorm), TensorBoard logging.
# --shuffle-train-labels: BUG twin, training labels are permuted (val labels intact).
import argparse, os, time
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import TensorDataset, DataLoader
from torch.utils.tensorboard import SummaryWriter

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--epochs", type=int, default=12)
p.add_argument("--lr", type=float, default=0.02)
p.add_argument("--shuffle-train-labels", action="store_true")
p.add_argument("--seed", type=int, default=0)
args = p.parse_args()
torch.set_num_threads(1)
torch.manual_seed(args.seed)

# synthetic "images": 10 classes, each a smooth random template + shift + noise
def make_data(n, g):
    templates = torch.randn(10, 1, 6, 6, generator=torch.Generator().manual_seed(123))
    templates = F.interpolate(templates, size=(16, 16), mode="bilinear", align_corners=False)
    y = torch.randint(0, 10, (n,), generator=g)
    x = templates[y].clone()
    sx = torch.randint(-2, 3, (n,), generator=g)
    for i in range(n):
        x[i] = torch.roll(x[i], shifts=int(sx[i]), dims=2)
    x = x + 3.0 * torch.randn(x.shape, generator=g)
    return x, y

g = torch.Generator().manual_seed(1)
xtr, ytr = make_data(4000, g)
xva, yva = make_data(1000, g)
if args.shuffle_train_labels:
    ytr = ytr[torch.randperm(len(ytr), generator=torch.Generator().manual_seed(7))]
mean, std = xtr.mean(), xtr.std()
xtr = (xtr - mean) / std
xva = (xva - mean) / std

train_loader = DataLoader(TensorDataset(xtr, ytr), batch_size=64, shuffle=True)
val_loader = DataLoader(TensorDataset(xva, yva), batch_size=256)

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 16, 3, padding=1); self.b1 = nn.BatchNorm2d(16)
        self.c2 = nn.Conv2d(16, 32, 3, padding=1); self.b2 = nn.BatchNorm2d(32)
        self.fc = nn.Linear(32 * 4 * 4, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.b1(self.c1(x))), 2)
        x = F.max_pool2d(F.relu(self.b2(self.c2(x))), 2)
        return self.fc(x.flatten(1))

model = Net()
opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.3)
os.makedirs(args.out, exist_ok=True)
writer = SummaryWriter(log_dir=os.path.join(args.out, "tb"))

global_step = 0
for epoch in range(args.epochs):
    model.train()
    t0 = time.time()
    for xb, yb in train_loader:
        opt.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        writer.add_scalar("train/loss", loss.item(), global_step)
        writer.add_scalar("lr", opt.param_groups[0]["lr"], global_step)
        global_step += 1
    sched.step()
    model.eval()
    tot, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for xb, yb in val_loader:
            out = model(xb)
            tot += F.cross_entropy(out, yb, reduction="sum").item()
            correct += (out.argmax(1) == yb).sum().item(); n += len(yb)
    writer.add_scalar("val/loss", tot / n, epoch)
    writer.add_scalar("val/acc", correct / n, epoch)
    print(f"epoch {epoch} val_loss {tot/n:.4f} val_acc {correct/n:.4f} ({time.time()-t0:.1f}s)")
    if (epoch + 1) % 4 == 0:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch},
                   os.path.join(args.out, f"ckpt_epoch{epoch}.pt"))
writer.close()
