# Plain PyTorch MLP on a synthetic tabular classification task (Gaussian mixture, 8 classes),
# Adam, per-batch loss to TensorBoard, val loss/acc each epoch.
import argparse, os
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import TensorDataset, DataLoader
from torch.utils.tensorboard import SummaryWriter

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--lr", type=float, default=1e-3)
parser.add_argument("--epochs", type=int, default=8)
args = parser.parse_args()
torch.set_num_threads(1)
torch.manual_seed(0)

g = torch.Generator().manual_seed(0)
D, C = 32, 8
centers = torch.randn(C * 3, D, generator=g) * 0.9
def make(n):
    comp = torch.randint(0, C * 3, (n,), generator=g)
    y = comp % C
    x = centers[comp] + torch.randn(n, D, generator=g)
    flip = torch.rand(n, generator=g) < 0.0
    y = torch.where(flip, torch.randint(0, C, (n,), generator=g), y)
    return x, y
xtr, ytr = make(14000)
xva, yva = make(3000)
train_dl = DataLoader(TensorDataset(xtr, ytr), batch_size=64, shuffle=True, drop_last=True)
val_dl = DataLoader(TensorDataset(xva, yva), batch_size=500)

model = nn.Sequential(nn.Linear(D, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, C))
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
os.makedirs(args.out, exist_ok=True)
writer = SummaryWriter(args.out)
global_step = 0
for epoch in range(1, args.epochs + 1):
    model.train()
    running = 0.0
    for xb, yb in train_dl:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item()
        writer.add_scalar("train_loss", loss.item(), global_step)
        writer.add_scalar("learning_rate", optimizer.param_groups[0]["lr"], global_step)
        global_step += 1
    model.eval()
    vloss, vcorrect = 0.0, 0
    with torch.no_grad():
        for xb, yb in val_dl:
            out = model(xb)
            vloss += F.cross_entropy(out, yb, reduction="sum").item()
            vcorrect += (out.argmax(1) == yb).sum().item()
    vloss /= len(xva); vacc = vcorrect / len(xva)
    writer.add_scalar("val/loss", vloss, epoch)
    writer.add_scalar("val/acc", vacc, epoch)
    print(f"Epoch {epoch}: train_loss={running/len(train_dl):.4f} val_loss={vloss:.4f} val_acc={vacc:.4f}")
    if epoch % 4 == 0:
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
                   os.path.join(args.out, f"ckpt_epoch{epoch}.pt"))
writer.close()
