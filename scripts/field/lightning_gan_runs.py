"""Lightning GANs with manual optimization (`automatic_optimization = False`), written the way the
Lightning docs' GAN example is: two Adam optimizers from `configure_optimizers`, the
discriminator stepped `n_critic` times per batch and the generator once, TensorBoard and CSV
loggers, ModelCheckpoint every 5 epochs. Lightning's `global_step` counts every
`optimizer.step()` of both optimizers, so it is (n_critic + 1) × the batches, while each
optimizer's Adam `step` counts its own; the .ckpt keeps both state dicts in
`optimizer_states`. A ring of 2-D points, MLPs of 64 units: each run takes seconds."""
import sys

import torch
import torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger

from common import record, run_dir, versions


class GAN(L.LightningModule):
    def __init__(self, n_critic=1):
        super().__init__()
        self.automatic_optimization = False
        self.n_critic = n_critic
        self.G = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 2))
        self.D = nn.Sequential(nn.Linear(2, 64), nn.LeakyReLU(0.2), nn.Linear(64, 1))
        self.save_hyperparameters()

    def training_step(self, batch, i):
        (x,) = batch
        opt_g, opt_d = self.optimizers()
        bce = nn.functional.binary_cross_entropy_with_logits
        ones, zeros = torch.ones(x.size(0), 1), torch.zeros(x.size(0), 1)
        for _ in range(self.n_critic):
            fake = self.G(torch.randn(x.size(0), 8)).detach()
            d_loss = bce(self.D(x), ones) + bce(self.D(fake), zeros)
            opt_d.zero_grad()
            self.manual_backward(d_loss)
            opt_d.step()
        g_loss = bce(self.D(self.G(torch.randn(x.size(0), 8))), ones)
        opt_g.zero_grad()
        self.manual_backward(g_loss)
        opt_g.step()
        self.log_dict({"d_loss": d_loss, "g_loss": g_loss}, prog_bar=True)

    def configure_optimizers(self):
        adam = lambda p: torch.optim.Adam(p, 2e-4, betas=(0.5, 0.999))  # noqa: E731
        return [adam(self.G.parameters()), adam(self.D.parameters())]


def train(name, n_critic):
    out = run_dir(name)
    torch.manual_seed(0)
    theta = torch.rand(4096) * 6.283
    data = torch.stack([torch.cos(theta), torch.sin(theta)], 1) * 2 + 0.05 * torch.randn(4096, 2)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=64,
                                         shuffle=True)
    trainer = L.Trainer(max_epochs=15, accelerator="cpu", enable_progress_bar=False,
                        log_every_n_steps=10,
                        logger=[TensorBoardLogger(out, name="tb"), CSVLogger(out, name="csv")],
                        callbacks=[ModelCheckpoint(dirpath=out / "checkpoints", every_n_epochs=5,
                                                   save_top_k=-1)])
    trainer.fit(GAN(n_critic), loader)


RUNS = {"lightning_gan_healthy": 1, "lightning_gan_ncritic2_healthy": 2}

if __name__ == "__main__":
    made = versions("torch", "lightning")
    for name, n_critic in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name, n_critic)
        record(name, made, None, [], {},
               profile={"framework": "lightning", "resumed_at": None, "init_checkpoint": False})
