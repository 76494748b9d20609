"""Unconditional DDPM on 16x16 blob/ring images with diffusers + accelerate (healthy).

Logs sit in nested folders: logs/tensorboard/ddpm-shapes/ (TensorBoard) and logs/metrics/train_log.jsonl.
checkpoints/checkpoint-<step>/ hold unet/ (safetensors), unet_ema/ (EMA copy), optimizer.pt, scheduler.pt,
and train_state.json. A warmup + cosine LR schedule is used.
"""
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from diffusers import DDPMScheduler, UNet2DModel
from diffusers.optimization import get_cosine_schedule_with_warmup
from diffusers.training_utils import EMAModel
from torch.utils.tensorboard import SummaryWriter

out = sys.argv[1]
tb_dir = os.path.join(out, "logs", "tensorboard", "ddpm-shapes")
js_dir = os.path.join(out, "logs", "metrics")
ck_dir = os.path.join(out, "checkpoints")
for d in (tb_dir, js_dir, ck_dir):
    os.makedirs(d, exist_ok=True)
torch.manual_seed(0)
torch.set_num_threads(1)

# ---- data: soft discs and rings in [-1, 1] ----
S = 16
rng = np.random.default_rng(0)
yy, xx = np.mgrid[0:S, 0:S]
imgs = np.empty((4000, 1, S, S), np.float32)
for i in range(len(imgs)):
    cx, cy, r = rng.uniform(5, 11), rng.uniform(5, 11), rng.uniform(2.5, 5)
    d = np.sqrt((xx - cx) ** 2 + (yy - cy) ** 2)
    img = 1 / (1 + np.exp((d - r) * 2.0)) if rng.random() < 0.5 else np.exp(-((d - r) ** 2) / 1.5)
    imgs[i, 0] = img * 2 - 1
data = torch.tensor(imgs)
loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True, drop_last=True)

config = dict(sample_size=S, train_steps=700, lr=1e-3, warmup_steps=50, ema_decay=0.995, save_every=250,
              num_train_timesteps=1000, beta_schedule="squaredcos_cap_v2")
unet = UNet2DModel(sample_size=S, in_channels=1, out_channels=1, layers_per_block=1,
                   block_out_channels=(16, 32), down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                   up_block_types=("AttnUpBlock2D", "UpBlock2D"), norm_num_groups=8)
ema = EMAModel(unet.parameters(), decay=config["ema_decay"], model_cls=UNet2DModel, model_config=unet.config)
noise_sched = DDPMScheduler(num_train_timesteps=config["num_train_timesteps"], beta_schedule=config["beta_schedule"])
opt = torch.optim.AdamW(unet.parameters(), lr=config["lr"], weight_decay=1e-4)
lr_sched = get_cosine_schedule_with_warmup(opt, config["warmup_steps"], config["train_steps"])

acc = Accelerator(cpu=True)
unet, opt, loader, lr_sched = acc.prepare(unet, opt, loader, lr_sched)
with open(os.path.join(out, "train_config.json"), "w") as f:
    json.dump(config, f, indent=1)

tb = SummaryWriter(tb_dir)
jl = open(os.path.join(js_dir, "train_log.jsonl"), "w")
step, epoch, run_loss = 0, 0, []
while step < config["train_steps"]:
    for x0 in loader:
        noise = torch.randn_like(x0)
        t = torch.randint(0, config["num_train_timesteps"], (x0.shape[0],))
        xt = noise_sched.add_noise(x0, noise, t)
        pred = unet(xt, t).sample
        loss = F.mse_loss(pred, noise)
        acc.backward(loss)
        gn = acc.clip_grad_norm_(unet.parameters(), 1.0)
        opt.step()
        lr_sched.step()
        opt.zero_grad()
        ema.step(unet.parameters())
        step += 1
        run_loss.append(loss.item())
        if step % 10 == 0:
            rec = {"step": step, "epoch": epoch, "loss": float(np.mean(run_loss)), "grad_norm": float(gn),
                   "lr": lr_sched.get_last_lr()[0], "ema_decay": ema.cur_decay_value}
            jl.write(json.dumps(rec) + "\n")
            jl.flush()
            for k in ("loss", "grad_norm", "lr"):
                tb.add_scalar(f"train/{k}", rec[k], step)
            run_loss = []
        if step % config["save_every"] == 0 or step == config["train_steps"]:
            cdir = os.path.join(ck_dir, f"checkpoint-{step}")
            acc.unwrap_model(unet).save_pretrained(os.path.join(cdir, "unet"))
            ema.save_pretrained(os.path.join(cdir, "unet_ema"))
            torch.save(opt.state_dict(), os.path.join(cdir, "optimizer.pt"))
            torch.save(lr_sched.state_dict(), os.path.join(cdir, "scheduler.pt"))
            with open(os.path.join(cdir, "train_state.json"), "w") as f:
                json.dump({"global_step": step, "epoch": epoch}, f)
        if step >= config["train_steps"]:
            break
    epoch += 1

# quick held-out denoising loss with the EMA weights at a few fixed timesteps
ema_unet = UNet2DModel.from_pretrained(os.path.join(ck_dir, f"checkpoint-{step}", "unet_ema"))
ema_unet.eval()
g = torch.Generator().manual_seed(1)
with torch.no_grad():
    x0 = data[:256]
    for tt in (50, 250, 500, 900):
        n = torch.randn(x0.shape, generator=g)
        t = torch.full((x0.shape[0],), tt)
        l = F.mse_loss(ema_unet(noise_sched.add_noise(x0, n, t), t).sample, n).item()
        tb.add_scalar(f"eval/ema_mse_t{tt}", l, step)
        jl.write(json.dumps({"eval": True, "step": step, "t": tt, "ema_mse": l}) + "\n")
jl.close()
tb.close()
