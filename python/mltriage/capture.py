"""Capture the evidence mltriage's probes read, for the first few steps of a training run.

Three hooks, one recorder:

* ``HFCallback()`` — a ``transformers.TrainerCallback``:
  ``Trainer(..., callbacks=[mltriage.capture.HFCallback()])``.
* ``LightningCallback()`` — a Lightning ``Callback``:
  ``L.Trainer(..., callbacks=[mltriage.capture.LightningCallback()])``.
* ``Capture`` — a plain loop, two lines::

      cap = capture.Capture(model, optimizer, out_dir)   # before the first step
      ...
      cap.step(batch, loss)                              # once per step, anywhere in it

For the first ``steps`` optimizer steps (default 5) it writes into ``<out_dir>/mltriage/``:

* ``batch_000.safetensors`` … — the first ``batches`` training batches as the model received
  them (``input_ids``, ``attention_mask``, ``labels``, ``pixel_values`` …), leading rows kept
  so that each file stays under ``max_batch_bytes``;
* ``checkpoint-0/model.safetensors`` (+ ``config.json`` for a transformers model) — the weights
  before the first update, when they fit under ``max_checkpoint_bytes``;
* ``metrics.jsonl`` — per parameter group, each step: ``grad_norm/pg{n}`` (the L2 norm of the
  group's gradients as the optimizer receives them: after clipping and AMP unscaling) and
  ``update_ratio/pg{n}`` (‖Δw‖ / ‖w‖ of the step, on a bounded prefix of every tensor);
* ``param_groups.json`` — the optimizer's groups: lr, weight_decay, betas, eps, momentum, the
  number of tensors and elements, tensors by dimensionality, the first names;
* ``facts.json`` — the run's facts (``phase``, ``from_scratch``, ``model_id``, token ids) that
  ``mltriage check`` reads as if given with ``--fact``;
* ``capture.json`` — what was captured and what was left out, and why.

It never changes training: it draws no random numbers, copies tensors with
``.detach()``/``.cpu()`` and only reads them, never touches gradients, modes or the optimizer's
state, and removes its hooks once the steps are captured. Only rank 0 writes. Any error while
capturing is reported once on stderr and recorded in ``capture.json``; training goes on.

torch, transformers and lightning are imported only inside the hook that needs them.
"""

import ctypes
import json
import math
import os
import sys

__all__ = ["Capture", "HFCallback", "LightningCallback", "FOLDER"]

#: The folder (inside the run's output directory) everything is written to.
FOLDER = "mltriage"

_DTYPES = {
    "float32": "F32",
    "float16": "F16",
    "bfloat16": "BF16",
    "float64": "F64",
    "int64": "I64",
    "int32": "I32",
    "int16": "I16",
    "int8": "I8",
    "uint8": "U8",
    "bool": "BOOL",
}

#: Names given to the parts of a tuple / list batch, by what they hold.
_SECOND = "labels"


def _rank0():
    for k in ("RANK", "LOCAL_RANK", "SLURM_PROCID"):
        v = os.environ.get(k)
        if v not in (None, "") and v != "0":
            return False
    return True


def _dtype_code(t):
    return _DTYPES.get(str(t.dtype).replace("torch.", ""))


def _tensor_bytes(t):
    """The raw little-endian bytes of a tensor, copied to the CPU (read only)."""
    c = t.detach().cpu().contiguous()
    n = c.numel() * c.element_size()
    if n == 0:
        return b""
    return ctypes.string_at(c.data_ptr(), n)


def write_safetensors(path, tensors, metadata=None):
    """Write ``{name: tensor}`` as a safetensors file (no dependency beyond torch)."""
    header = {}
    blobs = []
    off = 0
    for name, t in tensors.items():
        code = _dtype_code(t)
        if code is None:
            continue
        raw = _tensor_bytes(t)
        header[name] = {
            "dtype": code,
            "shape": list(t.shape),
            "data_offsets": [off, off + len(raw)],
        }
        blobs.append(raw)
        off += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(len(h).to_bytes(8, "little"))
        f.write(h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def _is_tensor(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _flatten_batch(batch, names=None, prefix=""):
    """``{name: tensor}`` from a dict (nested one level, joined with ``.``), a tuple/list, or
    one tensor. Non-tensor values are left out."""
    out = {}
    if _is_tensor(batch):
        out[prefix or _name_of_first(batch)] = batch
        return out
    if hasattr(batch, "items"):
        for k, v in batch.items():
            key = f"{prefix}{k}"
            if _is_tensor(v):
                out[key] = v
            elif hasattr(v, "items") and not prefix:
                out.update(_flatten_batch(v, prefix=key + "."))
        return out
    if isinstance(batch, (tuple, list)):
        tensors = [v for v in batch if _is_tensor(v)]
        dicts = [v for v in batch if hasattr(v, "items")]
        if dicts and not tensors:
            return _flatten_batch(dicts[0])
        for i, v in enumerate(tensors):
            if names and i < len(names):
                out[names[i]] = v
            elif i == 0:
                out[_name_of_first(v)] = v
            elif i == 1:
                out[_SECOND] = v
            else:
                out[f"input_{i}"] = v
    return out


def _name_of_first(t):
    """What the first part of an ``(x, y)`` batch is, by its dtype and rank."""
    if t.dtype.is_floating_point:
        return "pixel_values" if t.dim() == 4 else "inputs"
    return "input_ids"


def _bounded(tensors, cap):
    """Keep leading rows so the batch stays under ``cap`` bytes (rows cut alike in every
    tensor sharing the batch dimension). Returns (tensors, rows kept or None, rows)."""
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    if total <= cap or not tensors:
        return tensors, None, None
    rows = max((t.shape[0] for t in tensors.values() if t.dim() > 0), default=0)
    if rows <= 1:
        return {}, 0, rows
    keep = max(1, int(rows * cap / total))
    out = {}
    for k, t in tensors.items():
        out[k] = t[:keep] if t.dim() > 0 and t.shape[0] == rows else t
    if sum(t.numel() * t.element_size() for t in out.values()) > cap:
        return {}, 0, rows
    return out, keep, rows


def _innermost_optimizer(opt):
    """The torch optimizer under wrappers (accelerate's, Lightning's) that keep it in
    ``.optimizer``."""
    try:
        import torch
    except ImportError:  # pragma: no cover - no torch, nothing to hook
        return None
    seen = 0
    while opt is not None and seen < 8:
        inner = getattr(opt, "optimizer", None)
        if isinstance(inner, torch.optim.Optimizer) and inner is not opt:
            opt = inner
            seen += 1
            continue
        break
    return opt if isinstance(opt, torch.optim.Optimizer) else None


def _plain(v):
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    if isinstance(v, (tuple, list)):
        return [_plain(x) for x in v]
    if _is_tensor(v) and v.numel() == 1:
        return _plain(v.item())
    return str(v)


class Capture:
    """The recorder behind every hook; a plain loop uses it directly::

        cap = Capture(model, optimizer, out_dir)
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            cap.step(batch, loss)
            optimizer.step(); optimizer.zero_grad()

    ``step`` may sit anywhere in the step; gradients and updates are read by hooks on the
    optimizer. ``phase`` (sft | dpo | grpo | ppo | reward | pretrain …), ``from_scratch`` and
    ``model_id`` are written to ``facts.json``; ``facts`` adds any other ``--fact`` keys.
    ``batch_names`` names the parts of a tuple batch (default: ``input_ids``/``pixel_values``,
    then ``labels``).
    """

    def __init__(
        self,
        model=None,
        optimizer=None,
        out_dir=".",
        *,
        steps=5,
        batches=2,
        max_batch_bytes=16 << 20,
        max_checkpoint_bytes=2 << 30,
        sample_per_tensor=4096,
        phase=None,
        from_scratch=None,
        model_id=None,
        facts=None,
        batch_names=None,
        framework="plain",
        start_step=0,
        _defer=False,
    ):
        self.steps = int(steps)
        self.batches = int(batches)
        self.max_batch_bytes = int(max_batch_bytes)
        self.max_checkpoint_bytes = int(max_checkpoint_bytes)
        self.sample_per_tensor = int(sample_per_tensor)
        self.batch_names = batch_names
        self.framework = framework
        self.dir = os.path.join(os.fspath(out_dir), FOLDER)
        self.enabled = _rank0()
        self.model = None
        self.optimizer = None
        self.start_step = int(start_step)
        self.n_steps = 0
        self.n_batches = 0
        self.n_calls = 0
        self.closed = False
        self.files = []
        self.notes = []
        self._hooks = []
        self._facts = {}
        self._pending = None
        self._groups_written = False
        self._warned = False
        #: Read grads in the optimizer's pre-step hook (False: the framework's hook calls
        #: ``before_update`` once the closure's backward has run).
        self.grads_in_pre_hook = True
        self.set_facts(phase=phase, from_scratch=from_scratch, model_id=model_id, **(facts or {}))
        if not _defer:
            self.attach(model, optimizer)

    # -- setup ----------------------------------------------------------------------------

    def set_facts(self, **facts):
        """Add facts (``None`` values are ignored); written to ``facts.json``."""
        for k, v in facts.items():
            if v is None:
                continue
            if isinstance(v, bool):
                v = "true" if v else "false"
            self._facts[k] = str(v)
        if self.enabled and getattr(self, "model", None) is not None:
            self._write_facts()

    def attach(self, model, optimizer=None, state_dict_of=None):
        """Write the step-0 checkpoint of ``model`` and hook ``optimizer``."""
        if not self.enabled or self.closed:
            return
        self.model = model
        self._guard(self._model_facts, model)
        os.makedirs(self.dir, exist_ok=True)
        self._write_facts()
        if model is not None:
            self._guard(self._write_checkpoint0, model, state_dict_of)
        if optimizer is not None:
            self.hook_optimizer(optimizer)
        self._write_manifest()

    def hook_optimizer(self, optimizer):
        opt = _innermost_optimizer(optimizer)
        if opt is None:
            self.notes.append(
                f"optimizer {type(optimizer).__name__} is not a torch optimizer: no grad norms, "
                "update ratios or param groups"
            )
            return
        self.optimizer = opt
        try:
            self._hooks.append(opt.register_step_pre_hook(self._pre_step))
            self._hooks.append(opt.register_step_post_hook(self._post_step))
        except AttributeError:
            self.notes.append("this torch has no optimizer step hooks (torch < 2.0)")

    # -- the plain loop's call --------------------------------------------------------------

    def step(self, batch=None, loss=None):
        """Once per training step: records ``batch`` (the first ``batches`` of them) and the
        loss value (as ``capture/loss``, read by no probe)."""
        if not self.enabled or self.closed:
            return
        self.n_calls += 1
        if batch is not None:
            self.record_batch(batch)
        if loss is not None and self.n_calls <= self.steps:
            self._guard(self._log, {"step": self.start_step + self.n_calls, "capture/loss": loss})
        if self.n_calls >= self.steps and (self.optimizer is None or self.n_steps >= self.steps):
            self.close()

    def record_batch(self, batch, names=None):
        """Write one training batch as ``batch_NNN.safetensors`` (until ``batches`` are)."""
        if not self.enabled or self.closed or self.n_batches >= self.batches:
            return
        self._guard(self._write_batch, batch, names or self.batch_names)

    # -- optimizer hooks -------------------------------------------------------------------

    def _pre_step(self, opt, args, kwargs):
        # A closure (Lightning) runs the backward inside step(): its hook reads the grads.
        if self.closed or self.n_steps >= self.steps or not self.grads_in_pre_hook:
            return None
        self._guard(self._before, opt)
        return None

    def _post_step(self, opt, args, kwargs):
        if self.closed or self.n_steps >= self.steps:
            return None
        self._guard(self._after, opt)
        self.n_steps += 1
        if self.n_steps >= self.steps:
            self._remove_optimizer_hooks()
            self._guard(self._write_manifest)
        return None

    def before_update(self):
        """Read grads and snapshot weights now (the update follows): for frameworks that run
        the backward inside ``optimizer.step(closure)``."""
        if self.enabled and not self.closed and self.optimizer is not None:
            if self.n_steps < self.steps:
                self._guard(self._before, self.optimizer)

    def _before(self, opt):
        import torch

        if not self._groups_written:
            self._write_param_groups(opt)
        norms = []
        samples = []
        for g in opt.param_groups:
            sq = 0.0
            seen = False
            snap = []
            for p in g["params"]:
                if p.grad is not None and not p.grad.is_sparse:
                    n = torch.linalg.vector_norm(p.grad.detach(), dtype=torch.float32).item()
                    sq += n * n
                    seen = True
                if p.numel() > 0:
                    flat = p.detach().reshape(-1)[: self.sample_per_tensor]
                    snap.append((p, flat.to("cpu", dtype=torch.float64, copy=True)))
            norms.append(math.sqrt(sq) if seen else None)
            samples.append(snap)
        self._pending = (norms, samples)

    def _after(self, opt):
        import torch

        if self._pending is None:
            return
        norms, samples = self._pending
        self._pending = None
        row = {"step": self.start_step + self.n_steps + 1}
        for i, (n, snap) in enumerate(zip(norms, samples)):
            if n is not None:
                row[f"grad_norm/pg{i}"] = n
            dw = 0.0
            w = 0.0
            for p, before in snap:
                now = p.detach().reshape(-1)[: before.numel()].to("cpu", dtype=torch.float64)
                dw += float(torch.sum((now - before) ** 2))
                w += float(torch.sum(before**2))
            if w > 0:
                row[f"update_ratio/pg{i}"] = math.sqrt(dw) / math.sqrt(w)
        self._log(row)

    # -- writers ---------------------------------------------------------------------------

    def _model_facts(self, model):
        name = getattr(model, "name_or_path", None)
        if not name:
            cfg = getattr(model, "config", None)
            name = getattr(cfg, "_name_or_path", None) or getattr(cfg, "name_or_path", None)
        if name and "model_id" not in self._facts:
            self._facts["model_id"] = str(name)
            # Loaded from a checkpoint or the hub: a fine-tune, unless the caller says otherwise.
            self._facts.setdefault("from_scratch", "false")
            self._facts.setdefault("base_model", str(name))

    def _write_facts(self):
        if not self._facts:
            return
        os.makedirs(self.dir, exist_ok=True)
        self._dump_json("facts.json", dict(sorted(self._facts.items())))

    def _write_checkpoint0(self, model, state_dict_of=None):
        sd = state_dict_of(model) if state_dict_of else model.state_dict()
        tensors = {}
        seen = set()
        total = 0
        for k, t in sd.items():
            if not _is_tensor(t) or _dtype_code(t) is None:
                continue
            # Tied weights (an LM head sharing the embedding) are saved once, as HF does.
            key = (t.device.type, t.data_ptr(), tuple(t.shape), t.dtype) if t.numel() else None
            if key is not None and key in seen:
                continue
            if key is not None:
                seen.add(key)
            tensors[k] = t
            total += t.numel() * t.element_size()
        if total > self.max_checkpoint_bytes:
            self.notes.append(
                f"step-0 checkpoint not written: {total / 2**30:.2f} GiB of weights exceed "
                f"max_checkpoint_bytes ({self.max_checkpoint_bytes / 2**30:.2f} GiB)"
            )
            return
        d = os.path.join(self.dir, "checkpoint-0")
        os.makedirs(d, exist_ok=True)
        write_safetensors(os.path.join(d, "model.safetensors"), tensors, {"format": "pt"})
        self.files.append("checkpoint-0/model.safetensors")
        cfg = getattr(model, "config", None)
        if cfg is None:
            inner = getattr(model, "model", None)
            cfg = getattr(inner, "config", None)
        if cfg is not None and hasattr(cfg, "to_json_string"):
            with open(os.path.join(d, "config.json"), "w") as f:
                f.write(cfg.to_json_string())
            self.files.append("checkpoint-0/config.json")

    def _write_batch(self, batch, names):
        tensors = _flatten_batch(batch, names)
        tensors = {k: v for k, v in tensors.items() if _dtype_code(v) is not None}
        if not tensors:
            self.notes.append(f"batch {self.n_batches}: no tensors in a {type(batch).__name__}")
            self.n_batches += 1
            return
        kept, keep, rows = _bounded(tensors, self.max_batch_bytes)
        if not kept:
            self.notes.append(
                f"batch {self.n_batches}: one row is larger than max_batch_bytes "
                f"({self.max_batch_bytes} bytes): not written"
            )
            self.n_batches += 1
            return
        meta = {"step": self.start_step + self.n_steps, "source": "mltriage.capture"}
        if keep is not None:
            meta["rows_kept"] = f"{keep} of {rows}"
            self.notes.append(f"batch {self.n_batches}: kept the first {keep} of {rows} rows")
        name = f"batch_{self.n_batches:03d}.safetensors"
        write_safetensors(os.path.join(self.dir, name), kept, meta)
        self.files.append(name)
        self.n_batches += 1
        self._write_manifest()

    def _write_param_groups(self, opt):
        self._groups_written = True
        names = {}
        if self.model is not None:
            try:
                names = {id(p): n for n, p in self.model.named_parameters()}
            except Exception:  # noqa: BLE001 - names are a nicety
                names = {}
        groups = []
        for i, g in enumerate(opt.param_groups):
            ps = list(g["params"])
            by_ndim = {}
            for p in ps:
                by_ndim[str(p.dim())] = by_ndim.get(str(p.dim()), 0) + 1
            entry = {"index": i}
            for k in ("lr", "initial_lr", "weight_decay", "betas", "eps", "momentum", "nesterov"):
                if k in g:
                    entry[k] = _plain(g[k])
            entry["params"] = len(ps)
            entry["numel"] = sum(p.numel() for p in ps)
            entry["trainable"] = sum(1 for p in ps if p.requires_grad)
            entry["tensors_by_ndim"] = by_ndim
            entry["names"] = [names.get(id(p), "?") for p in ps[:32]]
            groups.append(entry)
        self._dump_json(
            "param_groups.json",
            {"optimizer": type(opt).__name__, "param_groups": groups},
        )

    def _log(self, row):
        row = {k: _plain(v) for k, v in row.items()}
        with open(os.path.join(self.dir, "metrics.jsonl"), "a") as f:
            f.write(json.dumps(row) + "\n")
        if "metrics.jsonl" not in self.files:
            self.files.append("metrics.jsonl")

    def _dump_json(self, name, obj):
        tmp = os.path.join(self.dir, name + ".tmp")
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1)
        os.replace(tmp, os.path.join(self.dir, name))
        if name not in self.files and name != "capture.json":
            self.files.append(name)

    def _write_manifest(self):
        if not os.path.isdir(self.dir):
            return
        self._dump_json(
            "capture.json",
            {
                "tool": "mltriage.capture",
                "format": 1,
                "framework": self.framework,
                "steps_captured": self.n_steps,
                "batches_captured": self.n_batches,
                "files": sorted(self.files),
                "notes": self.notes,
                "done": self.closed,
            },
        )

    def _guard(self, fn, *args):
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - capturing must never stop training
            msg = f"{fn.__name__.strip('_')}: {type(e).__name__}: {e}"
            self.notes.append(msg)
            if not self._warned:
                self._warned = True
                print(f"mltriage.capture: {msg} (training goes on)", file=sys.stderr)
            return None

    # -- teardown --------------------------------------------------------------------------

    def _remove_optimizer_hooks(self):
        for h in self._hooks:
            try:
                h.remove()
            except Exception:  # noqa: BLE001
                pass
        self._hooks = []

    def close(self):
        """Remove every hook and write ``capture.json``; further calls do nothing."""
        if self.closed:
            return
        self._remove_optimizer_hooks()
        self.closed = True
        if self.enabled:
            self._guard(self._write_manifest)


# ------------------------------------------------------------------------------------------
# transformers


def _phase_of_args(args):
    """The phase a TRL config class states (SFTConfig → sft …); None for TrainingArguments."""
    name = type(args).__name__
    for prefix, phase in (
        ("SFT", "sft"),
        ("DPO", "dpo"),
        ("GRPO", "grpo"),
        ("PPO", "ppo"),
        ("RLOO", "grpo"),
        ("Reward", "reward"),
        ("KTO", "kto"),
        ("ORPO", "orpo"),
        ("CPO", "dpo"),
    ):
        if name.startswith(prefix) and name.endswith("Config"):
            return phase
    return None


def _hf_callback_base():
    try:
        from transformers import TrainerCallback
    except ImportError:  # pragma: no cover - constructed only where transformers is
        return object
    return TrainerCallback


def HFCallback(out_dir=None, **kwargs):  # noqa: N802 - reads as a class at the call site
    """A ``transformers.TrainerCallback`` writing into ``<args.output_dir>/mltriage/`` (or
    ``out_dir``). Keyword arguments are :class:`Capture`'s (``steps``, ``batches``, ``phase``,
    ``from_scratch`` …). The batch is read by a forward pre-hook on the model while it trains
    (what the model receives), its hook removed after ``batches`` batches."""
    base = _hf_callback_base()
    cls = _HF_CLASSES.get(base)
    if cls is None:
        cls = type("HFCallback", (_HFCallbackMixin, base), {})
        _HF_CLASSES[base] = cls
    return cls(out_dir, kwargs)


_HF_CLASSES = {}
#: Keyword arguments the Trainer passes to forward that are not the batch.
_NOT_INPUTS = ("num_items_in_batch", "return_dict", "use_cache", "output_attentions")


class _HFCallbackMixin:
    def __init__(self, out_dir, kwargs):
        self._out_dir = out_dir
        self._kwargs = kwargs
        self.capture = None
        self._fwd = None

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kw):
        if self.capture is not None:
            return
        kwargs = dict(self._kwargs)
        if kwargs.get("phase") is None:
            kwargs["phase"] = _phase_of_args(args)
        cap = Capture(
            out_dir=self._out_dir or args.output_dir,
            framework="hf_trainer" if _phase_of_args(args) is None else "trl",
            start_step=state.global_step,
            _defer=True,
            **kwargs,
        )
        self.capture = cap
        tok = kw.get("processing_class") or kw.get("tokenizer")
        tok = getattr(tok, "tokenizer", tok)
        if tok is not None:
            ids = {}
            for k in ("pad_token_id", "eos_token_id", "bos_token_id"):
                v = getattr(tok, k, None)
                if isinstance(v, int):
                    ids[k] = v
            cap._facts.update({k: str(v) for k, v in ids.items() if k not in cap._facts})
        cap.attach(model, optimizer)
        if model is not None and cap.enabled:
            try:
                self._fwd = model.register_forward_pre_hook(self._on_forward, with_kwargs=True)
            except TypeError:  # torch < 2.0: positional inputs only
                self._fwd = model.register_forward_pre_hook(lambda m, a: self._on_forward(m, a, {}))

    def _on_forward(self, module, args, kwargs):
        cap = self.capture
        if cap is None or not module.training:
            return None
        batch = {k: v for k, v in kwargs.items() if k not in _NOT_INPUTS}
        if args:
            batch.update(_flatten_batch(tuple(args)))
        cap.record_batch(batch)
        if cap.n_batches >= cap.batches:
            self._drop_forward_hook()
        return None

    def _drop_forward_hook(self):
        if self._fwd is not None:
            self._fwd.remove()
            self._fwd = None

    def on_step_end(self, args, state, control, **kw):
        cap = self.capture
        if cap is not None and cap.n_steps >= cap.steps and cap.n_batches >= cap.batches:
            self._drop_forward_hook()
            cap.close()

    def on_train_end(self, args, state, control, **kw):
        self._drop_forward_hook()
        if self.capture is not None:
            self.capture.close()


# ------------------------------------------------------------------------------------------
# Lightning


def _lightning_base():
    try:
        from lightning.pytorch.callbacks import Callback

        return Callback
    except ImportError:
        pass
    try:
        from pytorch_lightning.callbacks import Callback

        return Callback
    except ImportError:  # pragma: no cover
        return object


_PL_CLASSES = {}


def LightningCallback(out_dir=None, **kwargs):  # noqa: N802 - reads as a class at the call site
    """A Lightning ``Callback`` writing into ``<trainer.log_dir or default_root_dir>/mltriage/``
    (or ``out_dir``). Keyword arguments are :class:`Capture`'s."""
    base = _lightning_base()
    cls = _PL_CLASSES.get(base)
    if cls is None:
        cls = type("LightningCallback", (_LightningMixin, base), {})
        _PL_CLASSES[base] = cls
    return cls(out_dir, kwargs)


class _LightningMixin:
    def __init__(self, out_dir, kwargs):
        self._out_dir = out_dir
        self._kwargs = kwargs
        self.capture = None

    def on_train_start(self, trainer, pl_module):
        if self.capture is not None:
            return
        out = self._out_dir or getattr(trainer, "log_dir", None) or trainer.default_root_dir
        cap = Capture(
            out_dir=out,
            framework="lightning",
            start_step=trainer.global_step,
            _defer=True,
            **self._kwargs,
        )
        self.capture = cap
        cap.grads_in_pre_hook = False
        opts = list(getattr(trainer, "optimizers", []) or [])
        cap.attach(pl_module, opts[0] if opts else None)
        for extra in opts[1:]:
            cap.notes.append(f"optimizer {type(extra).__name__} (not the first) not hooked")

    def on_before_optimizer_step(self, trainer, pl_module, optimizer, *args):
        # After the closure's backward (grads not yet clipped), before the update.
        if self.capture is not None:
            self.capture.before_update()

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if self.capture is not None:
            self.capture.record_batch(batch)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        cap = self.capture
        if cap is not None and cap.n_steps >= cap.steps and cap.n_batches >= cap.batches:
            cap.close()

    def on_train_end(self, trainer, pl_module):
        if self.capture is not None:
            self.capture.close()
