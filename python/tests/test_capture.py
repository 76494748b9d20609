"""mltriage.capture on tiny CPU models: the HF Trainer callback, the Lightning callback and the
plain loop's two lines each write the capture folder, and `mltriage check` then answers the
batch probes that skip on the same run without it; the capture never changes training (losses
and final weights equal bit for bit with and without it).

Run with the field venv (torch, transformers, lightning):
    /work/venv-field/bin/python -m unittest discover -s python/tests -v
or scripts/test-capture.sh. The mltriage binary: $MLTRIAGE_BIN, else the newer of
target/release/mltriage and target/debug/mltriage.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

from mltriage import capture  # noqa: E402

# Probes that answer from a dumped LM batch and must not skip once one is captured.
LM_BATCH_PROBES = ("label_mask", "pad_side", "pad_token")
VOCAB = 64
PAD = 0  # GPT-2 style: pad = EOS = 0


def mltriage_bin():
    b = os.environ.get("MLTRIAGE_BIN")
    if b:
        return b
    cands = [os.path.join(ROOT, "target", p, "mltriage") for p in ("release", "debug")]
    cands = [c for c in cands if os.path.exists(c)]
    if not cands:
        raise unittest.SkipTest("no built mltriage binary (cargo build first)")
    return max(cands, key=os.path.getmtime)


def check(run):
    out = subprocess.run(
        [mltriage_bin(), "check", run, "--json"], capture_output=True, text=True, timeout=300
    )
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def skipped_for_batch(report):
    return sorted(
        {
            f["probe"]
            for f in report["findings"]
            if f["status"] == "skip" and "no batch dump" in f["message"]
        }
    )


def status_of(report, probe):
    return [f["status"] for f in report["findings"] if f["probe"] == probe]


def tiny_gpt2():
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    cfg = GPT2Config(
        vocab_size=VOCAB,
        n_positions=32,
        n_embd=16,
        n_layer=1,
        n_head=2,
        bos_token_id=PAD,
        eos_token_id=PAD,
    )
    return GPT2LMHeadModel(cfg)


def rows(n=48, seed=1):
    """Token rows of varied length (made before training, from their own generator)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        length = int(torch.randint(8, 24, (1,), generator=g))
        ids = torch.randint(1, VOCAB, (length,), generator=g).tolist() + [PAD]
        out.append({"input_ids": ids})
    return out


def collate(examples):
    """Right padding with the pad (= EOS) id; labels copy the ids, pads masked with -100."""
    import torch

    width = max(len(e["input_ids"]) for e in examples)
    ids = torch.full((len(examples), width), PAD, dtype=torch.long)
    mask = torch.zeros((len(examples), width), dtype=torch.long)
    for i, e in enumerate(examples):
        n = len(e["input_ids"])
        ids[i, :n] = torch.tensor(e["input_ids"])
        mask[i, :n] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def files_in(folder):
    return sorted(os.listdir(folder))


class CaptureCase(unittest.TestCase):
    def setUp(self):
        warnings.filterwarnings("ignore")
        self.tmp = tempfile.mkdtemp(prefix="mltriage-capture-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def assert_capture_folder(self, run_dir, steps=5):
        d = os.path.join(run_dir, capture.FOLDER)
        self.assertTrue(os.path.isdir(d), f"no {d}")
        names = files_in(d)
        for want in (
            "batch_000.safetensors",
            "batch_001.safetensors",
            "capture.json",
            "facts.json",
            "metrics.jsonl",
            "param_groups.json",
            "checkpoint-0",
        ):
            self.assertIn(want, names)
        self.assertIn("model.safetensors", files_in(os.path.join(d, "checkpoint-0")))
        with open(os.path.join(d, "metrics.jsonl")) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        opt_rows = [r for r in lines if "grad_norm/pg0" in r]
        self.assertEqual(len(opt_rows), steps, lines)
        for r in opt_rows:
            self.assertGreater(r["grad_norm/pg0"], 0)
            self.assertGreater(r["update_ratio/pg0"], 0)
        with open(os.path.join(d, "param_groups.json")) as f:
            groups = json.load(f)["param_groups"]
        self.assertGreaterEqual(len(groups), 1)
        self.assertIn("lr", groups[0])
        self.assertGreater(groups[0]["params"], 0)
        with open(os.path.join(d, "capture.json")) as f:
            manifest = json.load(f)
        self.assertEqual(manifest["steps_captured"], steps)
        self.assertTrue(manifest["done"], manifest)
        return d

    def assert_batch_probes_answer(self, without, with_capture):
        missing = skipped_for_batch(without)
        self.assertTrue(
            set(LM_BATCH_PROBES) <= set(missing),
            f"without a capture these should skip for want of a batch: {missing}",
        )
        self.assertEqual(skipped_for_batch(with_capture), [])
        for p in missing:
            st = status_of(with_capture, p)
            self.assertTrue(st, f"{p} gave no finding")
            if p in LM_BATCH_PROBES:
                self.assertNotIn("skip", st, f"{p} still skips")
        answered = [p for p in missing if "skip" not in status_of(with_capture, p)]
        self.assertGreaterEqual(len(answered), len(LM_BATCH_PROBES), answered)
        for f in with_capture["findings"]:
            self.assertNotEqual(f["status"], "fail", f)
        # The evidence hint no longer asks for a batch dump.
        kinds = [m["evidence"] for m in with_capture.get("missing_evidence", [])]
        self.assertNotIn("batch_dump", kinds)


# ------------------------------------------------------------------------------------------
# HF Trainer


def hf_train(out_dir, callbacks, steps=6, save_steps=3):
    from transformers import Trainer, TrainingArguments

    model = tiny_gpt2()
    args = TrainingArguments(
        output_dir=out_dir,
        max_steps=steps,
        per_device_train_batch_size=4,
        learning_rate=3e-3,
        logging_steps=1,
        save_steps=save_steps,
        save_strategy="steps",
        report_to=[],
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = Trainer(
        model=model,
        args=args,
        train_dataset=rows(),
        data_collator=collate,
        callbacks=callbacks,
    )
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    return losses, {k: v.detach().clone() for k, v in model.state_dict().items()}


class HFTrainerTest(CaptureCase):
    def test_hf_callback_makes_batch_probes_answer_and_changes_nothing(self):
        import torch

        plain_dir = os.path.join(self.tmp, "plain")
        cap_dir = os.path.join(self.tmp, "captured")
        base_losses, base_w = hf_train(plain_dir, [])
        cb = capture.HFCallback(from_scratch=True, phase="pretrain")
        cap_losses, cap_w = hf_train(cap_dir, [cb])
        # Bit for bit: every logged loss and every final weight.
        self.assertEqual(len(base_losses), 6)
        self.assertEqual(base_losses, cap_losses)
        self.assertEqual(sorted(base_w), sorted(cap_w))
        for k in base_w:
            self.assertTrue(torch.equal(base_w[k], cap_w[k]), k)
        d = self.assert_capture_folder(cap_dir)
        with open(os.path.join(d, "facts.json")) as f:
            facts = json.load(f)
        self.assertEqual(facts["from_scratch"], "true")
        self.assertIn("config.json", files_in(os.path.join(d, "checkpoint-0")))
        without, with_capture = check(plain_dir), check(cap_dir)
        self.assert_batch_probes_answer(without, with_capture)
        self.assertEqual(with_capture["facts"]["map"]["from_scratch"]["value"], "true")
        # The step-0 checkpoint is the run's init.
        self.assertTrue(with_capture["profile"]["checkpoints"]["init"])
        self.assertFalse(without["profile"]["checkpoints"]["init"])


# ------------------------------------------------------------------------------------------
# Lightning


def lightning_train(root, callbacks, steps=6):
    import torch
    from torch.utils.data import DataLoader

    try:
        import lightning as L
    except ImportError:  # pragma: no cover
        import pytorch_lightning as L

    class LM(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = tiny_gpt2()

        def training_step(self, batch, batch_idx):
            loss = self.model(**batch).loss
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=3e-3)

    torch.manual_seed(0)
    module = LM()
    loader = DataLoader(rows(), batch_size=4, shuffle=False, collate_fn=collate)
    trainer = L.Trainer(
        max_steps=steps,
        accelerator="cpu",
        devices=1,
        default_root_dir=root,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        callbacks=callbacks,
    )
    trainer.fit(module, loader)
    return {k: v.detach().clone() for k, v in module.state_dict().items()}, trainer


class LightningTest(CaptureCase):
    def test_lightning_callback_makes_batch_probes_answer(self):
        import torch

        base_w, _ = lightning_train(os.path.join(self.tmp, "plain"), [])
        cb = capture.LightningCallback(from_scratch=True, phase="pretrain")
        cap_w, trainer = lightning_train(os.path.join(self.tmp, "captured"), [cb])
        for k in base_w:
            self.assertTrue(torch.equal(base_w[k], cap_w[k]), k)
        self.assert_capture_folder(trainer.log_dir)
        without = check(os.path.join(self.tmp, "plain"))
        with_capture = check(os.path.join(self.tmp, "captured"))
        self.assertEqual(with_capture["profile"]["framework"]["value"], "lightning")
        self.assert_batch_probes_answer(without, with_capture)


# ------------------------------------------------------------------------------------------
# A plain loop


def plain_train(out_dir, use_capture, steps=6):
    import torch

    os.makedirs(out_dir, exist_ok=True)
    model = tiny_gpt2()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    data = rows()
    cap = (
        capture.Capture(model, opt, out_dir, from_scratch=True, phase="pretrain") if use_capture else None
    )
    losses = []
    with open(os.path.join(out_dir, "train_log.jsonl"), "w") as log:
        for step in range(steps):
            batch = collate(data[4 * step : 4 * step + 4])
            loss = model(**batch).loss
            loss.backward()
            if cap:
                cap.step(batch, loss)
            opt.step()
            opt.zero_grad()
            losses.append(loss.item())
            log.write(json.dumps({"step": step + 1, "loss": losses[-1]}) + "\n")
    if cap:
        cap.step()  # a last call after the final update closes it
    model.save_pretrained(os.path.join(out_dir, "final"))
    return losses, {k: v.detach().clone() for k, v in model.state_dict().items()}, cap


class PlainLoopTest(CaptureCase):
    def test_two_lines_make_batch_probes_answer_and_change_nothing(self):
        import torch

        plain_dir = os.path.join(self.tmp, "plain")
        cap_dir = os.path.join(self.tmp, "captured")
        base_losses, base_w, _ = plain_train(plain_dir, False)
        cap_losses, cap_w, cap = plain_train(cap_dir, True)
        self.assertEqual(base_losses, cap_losses)
        for k in base_w:
            self.assertTrue(torch.equal(base_w[k], cap_w[k]), k)
        self.assertTrue(cap.closed)
        self.assertEqual(cap._hooks, [])
        self.assert_capture_folder(cap_dir)
        self.assert_batch_probes_answer(check(plain_dir), check(cap_dir))

    def test_a_tuple_batch_is_named_and_bounded(self):
        import torch

        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 4))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        # 64 rows of 3x8x8 float32 = 48 KiB; a 20 KiB cap keeps the leading rows only.
        cap = capture.Capture(model, opt, self.tmp, max_batch_bytes=20 << 10, batches=1)
        x = torch.rand(64, 3, 8, 8)
        y = torch.arange(64) % 4
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        cap.step((x, y), loss)
        opt.step()
        path = os.path.join(self.tmp, capture.FOLDER, "batch_000.safetensors")
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
        self.assertEqual(header["pixel_values"]["dtype"], "F32")
        self.assertEqual(header["labels"]["dtype"], "I64")
        kept = header["pixel_values"]["shape"][0]
        self.assertLess(kept, 64)
        self.assertEqual(header["labels"]["shape"], [kept])
        self.assertEqual(header["pixel_values"]["shape"][1:], [3, 8, 8])
        self.assertLessEqual(os.path.getsize(path), (20 << 10) + n + 8)
        # The bytes are the tensor's own.
        with open(path, "rb") as f:
            f.seek(8 + n)
            a, b = header["pixel_values"]["data_offsets"]
            f.seek(8 + n + a)
            raw = f.read(b - a)
        back = torch.frombuffer(bytearray(raw), dtype=torch.float32).reshape(kept, 3, 8, 8)
        self.assertTrue(torch.equal(back, x[:kept]))

    def test_importing_capture_imports_no_framework(self):
        code = (
            "import sys; sys.path.insert(0, %r); import mltriage.capture; "
            "bad = [m for m in ('torch', 'transformers', 'lightning', 'pytorch_lightning') "
            "if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)"
        ) % os.path.join(ROOT, "python")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)


if __name__ == "__main__":
    unittest.main()
