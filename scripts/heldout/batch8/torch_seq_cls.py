# Plain PyTorch GRU sequence classifier (synthetic sequences), TensorBoard + log.csv,
# best/last checkpoints selected on validation loss.
import os, sys, csv, torch
torch.set_num_threads(1)
from torch.utils.tensorboard import SummaryWriter
out = sys.argv[1]; os.makedirs(os.path.join(out, "checkpoints"), exist_ok=True)
torch.manual_seed(0)
g = torch.Generator().manual_seed(0)
V, T, C = 20, 20, 3
def make(n):
    x = torch.randint(0, V, (n, T), generator=g)
    y = ((x == 3).sum(1) - (x == 7).sum(1)).sign().long() + 1    # which of two tokens is more frequent
    return torch.utils.data.TensorDataset(x, y)
tr = torch.utils.data.DataLoader(make(3000), batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(1))
va = torch.utils.data.DataLoader(make(800), batch_size=100)
class M(torch.nn.Module):
    def __init__(s):
        super().__init__(); s.emb = torch.nn.Embedding(V, 32); s.rnn = torch.nn.GRU(32, 64, batch_first=True); s.fc = torch.nn.Linear(64, C)
    def forward(s, x): return s.fc(s.rnn(s.emb(x))[1][-1])
model = M(); opt = torch.optim.Adam(model.parameters(), lr=3e-3)
train_crit = torch.nn.CrossEntropyLoss()
val_crit = torch.nn.CrossEntropyLoss(reduction="sum")
tb = SummaryWriter(os.path.join(out, "tb")); f = open(os.path.join(out, "log.csv"), "w", newline=""); w = csv.writer(f)
w.writerow(["epoch", "step", "train_loss", "val_loss", "val_acc"])
step, best = 0, float("inf")
for ep in range(8):
    model.train(); tl, nb = 0.0, 0
    for x, y in tr:
        loss = train_crit(model(x), y); opt.zero_grad(); loss.backward(); opt.step(); step += 1; tl += loss.item(); nb += 1
        if step % 10 == 0: tb.add_scalar("train/loss", loss.item(), step)
    model.eval(); vloss, correct, n = 0.0, 0, 0
    with torch.no_grad():
        for x, y in va:
            o = model(x); vloss += val_crit(o, y).item(); correct += (o.argmax(1) == y).sum().item(); n += len(y)
    vacc = correct / n
    tb.add_scalar("val/loss", vloss, step); tb.add_scalar("val/acc", vacc, step)
    w.writerow([ep, step, round(tl / nb, 5), round(vloss, 4), round(vacc, 4)]); f.flush()
    print(f"epoch {ep} train {tl/nb:.4f} val {vloss:.4f} acc {vacc:.4f}")
    ck = {"epoch": ep, "step": step, "model": model.state_dict(), "optimizer": opt.state_dict(), "val_loss": vloss}
    torch.save(ck, os.path.join(out, "checkpoints", "last.pt"))
    if vloss < best: best = vloss; torch.save(ck, os.path.join(out, "checkpoints", "best.pt"))
tb.close(); f.close()
