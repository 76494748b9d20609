"""diffusers DDPM training of a tiny UNet2DModel on 16x16 procedurally generated sprites, in the style of
diffusers' examples/unconditional_image_generation/train_unconditional.py: Accelerator(log_with="tensorboard")
-> logs/<project>/, EMAModel on the UNet, accelerator.save_state checkpoints (checkpoint-N/), and the final
DDPMPipeline (with the EMA weights) saved with save_pretrained."""
import os, sys
sys.path.insert(0, os.path.dirname(__file__))
import common
import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import ProjectConfiguration
from diffusers import UNet2DModel, DDPMScheduler, DDPMPipeline
from diffusers.training_utils import EMAModel
from diffusers.optimization import get_cosine_schedule_with_warmup

name = sys.argv[2]
out = common.run_dir(name)
common.seed_all(0)
x, _ = common.shape_images(2000, size=16, seed=0, noise=8)
data = common.to_tensor_images(x)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(data), batch_size=32, shuffle=True, drop_last=True)
STEPS = int(os.environ.get("STEPS", 400))
accelerator = Accelerator(cpu=True, log_with="tensorboard",
                          project_config=ProjectConfiguration(project_dir=out, logging_dir=os.path.join(out, "logs")))
unet = UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1, block_out_channels=(16, 32, 32),
                   down_block_types=("DownBlock2D",) * 3, up_block_types=("UpBlock2D",) * 3,
                   norm_num_groups=8)
ema = EMAModel(unet.parameters(), decay=0.995, use_ema_warmup=True, inv_gamma=1.0, power=0.75,
               model_cls=UNet2DModel, model_config=unet.config)
noise_sched = DDPMScheduler(num_train_timesteps=200, beta_schedule="squaredcos_cap_v2")
opt = torch.optim.AdamW(unet.parameters(), lr=2e-3, weight_decay=1e-4)
lr_sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=50, num_training_steps=STEPS)
unet, opt, loader, lr_sched = accelerator.prepare(unet, opt, loader, lr_sched)
accelerator.init_trackers("sprites_ddpm", config={"lr": 2e-3, "steps": STEPS, "ema_decay": 0.995, "batch": 32})
step, losses = 0, []
while step < STEPS:
    for (clean,) in loader:
        noise = torch.randn_like(clean)
        t = torch.randint(0, noise_sched.config.num_train_timesteps, (clean.shape[0],))
        pred = unet(noise_sched.add_noise(clean, noise, t), t).sample
        loss = F.mse_loss(pred, noise)
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(unet.parameters(), 1.0)
        opt.step(); lr_sched.step(); opt.zero_grad()
        ema.step(unet.parameters())
        step += 1
        losses.append(loss.item())
        if step % 10 == 0:
            accelerator.log({"loss": sum(losses[-10:]) / 10, "lr": lr_sched.get_last_lr()[0], "ema_decay": ema.cur_decay_value}, step=step)
        if step % 300 == 0:
            accelerator.save_state(os.path.join(out, f"checkpoint-{step}"))
        if step >= STEPS:
            break
accelerator.end_training()
u = accelerator.unwrap_model(unet)
ema.copy_to(u.parameters())
DDPMPipeline(unet=u, scheduler=noise_sched).save_pretrained(out)
ema.save_pretrained(os.path.join(out, "unet_ema"))
print("loss per 50 steps:", [round(sum(losses[i:i + 50]) / 50, 4) for i in range(0, len(losses), 50)])
