"""Checkpoints of the target and the drafters: small float16 files, validated on load.

Role: `save_target` / `save_drafter` write one torch file each (`target.pt`, `<kind><layers>.pt`, e.g.
`dspark2.pt`) holding {"format": "specbed-lm", "version": 1, "role", "config", "weights" (float16),
"meta", and for drafters "target_digest" (the target they were trained on) and "sts" (STS temperatures or
None)}. Weights are stored in float16 and always used as float32 after loading, so the stored file IS
the model (training ends by rounding through float16 before anything is measured).
`load_bundle(dir)` reads the target and every drafter it finds. Any problem (missing file, unreadable or
corrupt file, wrong format/version, shapes that do not fit the config, a drafter trained on another
target) raises `specsched.io.errors.InputError` naming the file: the CLI turns it into one line + exit 2.

May import: torch, stdlib, specsched.io.errors, engine.model, engine.lm.*.
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import torch

from engine.lm.eagle import EagleDrafter
from engine.lm.layers import DraftConfig
from engine.lm.parallel import ParallelDrafter
from engine.lm.target import weight_shapes
from engine.model import ModelConfig, TinyLM
from specsched.io.errors import InputError

FORMAT, VERSION = "specbed-lm", 1
DEFAULT_DIR = Path(__file__).resolve().parent.parent / "checkpoints"


def digest(weights: dict[str, torch.Tensor]) -> str:
    """Short content hash of float16-rounded weights (names sorted)."""
    h = hashlib.sha256()
    for name in sorted(weights):
        h.update(name.encode())
        h.update(weights[name].detach().to(torch.float16).contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def rounded(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Weights rounded through float16 and back to float32 (what a checkpoint stores)."""
    return {k: v.detach().to(torch.float16).to(torch.float32) for k, v in weights.items()}


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save(doc, tmp)
    tmp.replace(path)


def save_target(path: Path, config: ModelConfig, weights: dict[str, torch.Tensor], meta: dict) -> str:
    w16 = {k: v.detach().to(torch.float16).contiguous() for k, v in weights.items()}
    _write(
        Path(path),
        {
            "format": FORMAT,
            "version": VERSION,
            "role": "target",
            "config": dataclasses.asdict(config),
            "weights": w16,
            "meta": meta,
        },
    )
    return digest(weights)


def save_drafter(path: Path, net, target_digest: str, meta: dict, sts=None) -> None:
    w16 = {k: v.detach().to(torch.float16).contiguous() for k, v in net.state_dict().items()}
    cfg = dataclasses.asdict(net.cfg)
    cfg["feature_layers"] = list(cfg["feature_layers"])
    _write(
        Path(path),
        {
            "format": FORMAT,
            "version": VERSION,
            "role": "drafter",
            "config": cfg,
            "weights": w16,
            "meta": meta,
            "target_digest": target_digest,
            "sts": None if sts is None else [float(t) for t in sts],
        },
    )


def _read(path: Path, role: str) -> dict:
    file = str(path)
    if not path.is_file():
        raise InputError(
            f"missing {role} checkpoint (run `python -m engine.lm.train --out {path.parent}`)", file=file
        )
    try:
        doc = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        raise InputError(
            f"corrupt checkpoint ({type(err).__name__}: {' '.join(str(err).split())[:120]})", file=file
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InputError(f"not a {FORMAT} checkpoint", file=file)
    if doc.get("version") != VERSION:
        raise InputError(
            f"unsupported checkpoint version {doc.get('version')!r} (expected {VERSION})", file=file
        )
    if doc.get("role") != role:
        raise InputError(f"expected a {role} checkpoint, found role {doc.get('role')!r}", file=file)
    for key in ("config", "weights", "meta"):
        if not isinstance(doc.get(key), dict):
            raise InputError(f"checkpoint field '{key}' missing or not a mapping", file=file)
    return doc


def _config(cls, doc: dict, file: str):
    try:
        raw = dict(doc["config"])
        if cls is DraftConfig and "feature_layers" in raw:
            raw["feature_layers"] = tuple(raw["feature_layers"])
        return cls(**raw)
    except (TypeError, ValueError) as err:
        raise InputError(f"bad config in checkpoint: {' '.join(str(err).split())}", file=file) from None


def load_target(path: str | Path) -> tuple[ModelConfig, dict[str, torch.Tensor], dict]:
    """(config, float32 weights, meta) of a target checkpoint."""
    path = Path(path)
    doc = _read(path, "target")
    cfg = _config(ModelConfig, doc, str(path))
    weights = doc["weights"]
    for name, shape in weight_shapes(cfg).items():
        t = weights.get(name)
        if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape:
            got = None if not isinstance(t, torch.Tensor) else tuple(t.shape)
            raise InputError(f"weight '{name}' has shape {got}, config needs {shape}", file=str(path))
    return cfg, {k: weights[k].to(torch.float32) for k in weight_shapes(cfg)}, doc["meta"]


def build_drafter(cfg: DraftConfig, tcfg: ModelConfig, target_weights: dict, gen: torch.Generator):
    cls = EagleDrafter if cfg.kind == "eagle" else ParallelDrafter
    return cls(cfg, tcfg, target_weights, gen)


def load_drafter(path: str | Path, tcfg: ModelConfig, target_weights: dict):
    """(net in eval mode, STS temperatures or None, meta) of a drafter checkpoint for this target."""
    path = Path(path)
    doc = _read(path, "drafter")
    cfg = _config(DraftConfig, doc, str(path))
    if doc.get("target_digest") != digest(target_weights):
        raise InputError("drafter was trained on a different target checkpoint", file=str(path))
    try:
        net = build_drafter(cfg, tcfg, target_weights, torch.Generator().manual_seed(0))
        net.load_state_dict({k: v.to(torch.float32) for k, v in doc["weights"].items()}, strict=True)
    except (RuntimeError, ValueError, KeyError) as err:
        raise InputError(
            f"weights do not fit the config ({' '.join(str(err).split())[:160]})", file=str(path)
        ) from None
    sts = doc.get("sts")
    return net.eval(), (None if sts is None else [float(t) for t in sts]), doc["meta"]


@dataclass
class Bundle:
    """A loaded checkpoint directory: the target and the drafters by name (e.g. "dspark2")."""

    directory: Path
    config: ModelConfig
    weights: dict[str, torch.Tensor]
    meta: dict
    drafters: dict[str, tuple[object, list[float] | None, dict]] = field(default_factory=dict)

    def target(self, device: str = "cpu") -> TinyLM:
        """The engine's target: a TinyLM of the checkpoint's weights on `device`."""
        return TinyLM(self.config, {k: v.to(device) for k, v in self.weights.items()})

    def names(self) -> list[str]:
        return sorted(self.drafters)

    def net(self, name: str):
        if name not in self.drafters:
            raise InputError(
                f"no drafter '{name}' (have: {', '.join(self.names()) or 'none'})", file=str(self.directory)
            )
        return self.drafters[name][0]


def load_bundle(directory: str | Path | None = None, names: list[str] | None = None) -> Bundle:
    """Load `target.pt` and the drafters `names` (default: every other *.pt) from `directory`."""
    d = Path(directory) if directory is not None else DEFAULT_DIR
    if not d.is_dir():
        raise InputError("checkpoint directory not found", file=str(d))
    cfg, weights, meta = load_target(d / "target.pt")
    bundle = Bundle(d, cfg, weights, meta)
    wanted = names if names is not None else sorted(p.stem for p in d.glob("*.pt") if p.stem != "target")
    for name in wanted:
        bundle.drafters[name] = load_drafter(d / f"{name}.pt", cfg, weights)
    return bundle


def corpus_for(bundle: Bundle):
    """The corpus (same data config, hence the same splits) the bundle's target was trained on."""
    from engine.lm.data import Corpus, DataConfig

    try:
        data = DataConfig(**bundle.meta.get("data", {}))
    except (TypeError, ValueError) as err:
        raise InputError(
            f"bad data config in checkpoint meta: {err}", file=str(bundle.directory / "target.pt")
        ) from None
    return Corpus.build(data)
