"""diffusers runs in the shape of its train_unconditional example: a tiny UNet2DModel and a
DDPMScheduler trained with accelerate, EMAModel, save hooks that write checkpoint-N/unet and
unet_ema next to accelerate's optimizer.bin / scheduler.bin / random_states_0.pkl, logging
through accelerate's tensorboard tracker, and a DDPMPipeline saved with save_pretrained."""
import copy
import sys

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from diffusers import DDPMPipeline, DDPMScheduler, UNet2DModel
from diffusers.optimization import get_scheduler
from diffusers.training_utils import EMAModel

from common import record, run_dir, versions


def images(n, seed):
    """Smooth 8x8 RGB blobs in [-1, 1]."""
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, 8), torch.linspace(-1, 1, 8), indexing="ij")
    c = torch.rand(n, 2, generator=g) * 1.2 - 0.6
    r = torch.exp(-((xx - c[:, :1, None]) ** 2 + (yy - c[:, 1:, None]) ** 2) / 0.2)
    col = torch.rand(n, 3, 1, 1, generator=g)
    return (r[:, None] * col) * 2 - 1


def train(name, use_ema=True, ema_step=True, lr=1e-3, steps=300, ckpt_every=150):
    out = run_dir(name)
    torch.manual_seed(0)
    acc = Accelerator(log_with="tensorboard", project_dir=str(out), cpu=True)
    acc.init_trackers("train_unconditional", config={"learning_rate": lr, "use_ema": use_ema,
                                                     "ddpm_num_steps": 100, "max_steps": steps})
    model = UNet2DModel(sample_size=8, in_channels=3, out_channels=3, layers_per_block=1,
                        block_out_channels=(8, 16), norm_num_groups=4,
                        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                        up_block_types=("AttnUpBlock2D", "UpBlock2D"))
    ema = EMAModel(copy.deepcopy(model).parameters(), decay=0.99, use_ema_warmup=True,
                   inv_gamma=1.0, power=0.75, model_cls=UNet2DModel,
                   model_config=model.config) if use_ema else None
    noise_sched = DDPMScheduler(num_train_timesteps=100, beta_schedule="squaredcos_cap_v2")
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-6)
    data = torch.utils.data.DataLoader(images(16 * steps, 1), batch_size=16, shuffle=True)
    lr_sched = get_scheduler("cosine", optimizer=opt, num_warmup_steps=30,
                             num_training_steps=steps)

    def save_hook(models, weights, output_dir):
        if ema is not None:
            ema.save_pretrained(f"{output_dir}/unet_ema")
        for m in models:
            m.save_pretrained(f"{output_dir}/unet")
            weights.pop()

    acc.register_save_state_pre_hook(save_hook)
    model, opt, data, lr_sched = acc.prepare(model, opt, data, lr_sched)
    step = 0
    for clean in data:
        noise = torch.randn_like(clean)
        t = torch.randint(0, 100, (clean.shape[0],))
        noisy = noise_sched.add_noise(clean, noise, t)
        with acc.accumulate(model):
            loss = F.mse_loss(model(noisy, t).sample, noise)
            acc.backward(loss)
            if acc.sync_gradients:
                acc.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            lr_sched.step()
            opt.zero_grad()
        if acc.sync_gradients:
            if ema is not None and ema_step:
                ema.step(model.parameters())
            step += 1
            logs = {"loss": loss.detach().item(), "lr": lr_sched.get_last_lr()[0], "step": step}
            if ema is not None:
                logs["ema_decay"] = ema.cur_decay_value
            acc.log(logs, step=step)
            if step % ckpt_every == 0:
                acc.save_state(str(out / f"checkpoint-{step}"))
        if step >= steps:
            break
    unet = acc.unwrap_model(model)
    if ema is not None:
        ema.store(unet.parameters())
        ema.copy_to(unet.parameters())
    DDPMPipeline(unet=unet, scheduler=noise_sched).save_pretrained(str(out))
    acc.end_training()


RUNS = {
    "diffusers_ema_healthy": (dict(), None, [], {}),
    "diffusers_noema_healthy": (dict(use_ema=False), None, [], {}),
    "diffusers_ema_never_updated": (
        dict(ema_step=False),
        "ema.step() never called: unet_ema (and the exported pipeline) keep the initial weights",
        ["DF2"], {}),
    "diffusers_lr_100x": (dict(lr=1e-1, use_ema=False), "learning_rate 1e-1, 100x the healthy 1e-3",
                          ["S3.1", "S3.2", "S4.1", "S1.2", "O22"], {"lr_max": "0.001"}),
}

if __name__ == "__main__":
    made = versions("torch", "diffusers", "accelerate")
    for name, (kw, bug, accept, facts) in RUNS.items():
        if len(sys.argv) > 1 and name not in sys.argv[1:]:
            continue
        train(name, **kw)
        record(name, made, bug, accept, facts)
