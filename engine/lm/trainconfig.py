"""Training configuration: `TrainConfig`, its presets, TOML / `--set` resolution and TOML dumping.

Role: say everything a training run depends on (sizes, steps, rates, drafters, STS data, threads, data),
validate it on construction (ValueError naming the field) and round-trip it through TOML (the resolved
config is saved beside the checkpoints as `train_config.toml`).

May import: stdlib, tomllib, specsched.io.errors, engine.model, engine.lm.data, engine.lm.layers.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from dataclasses import dataclass, field

from engine.lm.data import DataConfig
from engine.lm.layers import DraftConfig
from engine.model import ModelConfig
from specsched.io import inputs
from specsched.io.errors import InputError

_NAME = re.compile(r"^(eagle|dflash|dspark)(\d+)$")


@dataclass(frozen=True)
class TrainConfig:
    """Sizes, steps and rates of one training run (see engine.lm.train). drafters: names kind+layers.
    markov / rank / conf_detach: DSpark's sequential head (engine.lm.parallel); decay: the position weights
    exp(−k/decay) of every parallel drafter's losses (DFlash and DSpark alike). sts_prompts per domain (val
    split) and sts_fit ("nll" | "ece", see specsched.confidence): DSpark's STS calibration.
    drafter_data: "target" (as the paper: the drafters train on text the target itself generated, plain
    decoding at temperature 1 from `gen_sequences` prompts of `gen_prompt_len` train-split bytes) or
    "text" (windows of the corpus)."""

    seed: int = 0
    d_model: int = 128
    n_layers: int = 4
    n_heads: int = 4
    context: int = 192
    target_steps: int = 1400
    target_batch: int = 16
    target_lr: float = 3e-3
    drafter_steps: int = 1500
    drafter_batch: int = 8
    drafter_lr: float = 2e-3
    drafters: tuple[str, ...] = ("eagle1", "dflash2", "dspark2", "dflash4")
    gamma: int = 7
    markov: str = "rnn"
    rank: int = 128
    conf_detach: bool = False
    decay: float = 4.0
    anchors: int = 24
    ttt: int = 1
    sts_prompts: int = 192
    sts_fit: str = "ece"
    sts_prompt_len: int = 48
    sts_new_tokens: int = 96
    drafter_data: str = "target"
    gen_sequences: int = 1536
    gen_prompt_len: int = 32
    threads: int = 1
    data: DataConfig = field(default_factory=DataConfig)

    def __post_init__(self) -> None:
        for name in (
            "d_model",
            "n_layers",
            "n_heads",
            "context",
            "target_steps",
            "target_batch",
            "drafter_steps",
            "drafter_batch",
            "gamma",
            "rank",
            "anchors",
            "sts_prompts",
            "sts_new_tokens",
            "threads",
            "gen_sequences",
            "gen_prompt_len",
        ):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"TrainConfig field '{name}': must be >= 1, got {getattr(self, name)}")
        if self.markov not in ("vanilla", "gated", "rnn"):
            raise ValueError(f"TrainConfig field 'markov': vanilla, gated or rnn, got {self.markov!r}")
        if self.sts_fit not in ("nll", "ece"):
            raise ValueError(f"TrainConfig field 'sts_fit': nll or ece, got {self.sts_fit!r}")
        if not self.decay > 0:
            raise ValueError(f"TrainConfig field 'decay': must be > 0, got {self.decay}")
        if self.drafter_data not in ("target", "text"):
            raise ValueError(f"TrainConfig field 'drafter_data': target or text, got {self.drafter_data!r}")
        if self.gen_prompt_len + 2 > self.context:
            raise ValueError("TrainConfig field 'gen_prompt_len': must be < context - 1")
        if self.context < 16 or self.sts_prompt_len + self.sts_new_tokens + self.gamma + 1 > self.context:
            raise ValueError(
                "TrainConfig field 'context': must be >= 16 and hold sts_prompt_len + "
                "sts_new_tokens + gamma + 1"
            )
        for name in self.drafters:
            if not _NAME.match(name):
                raise ValueError(
                    f"TrainConfig field 'drafters': bad name {name!r} (eagle1, dflash2, dspark2, ...)"
                )
        if not (self.target_lr > 0 and self.drafter_lr > 0):
            raise ValueError("TrainConfig fields 'target_lr', 'drafter_lr': must be > 0")

    def model_config(self) -> ModelConfig:
        return ModelConfig(
            vocab_size=256,
            d_model=self.d_model,
            n_layers=self.n_layers,
            n_heads=self.n_heads,
            max_len=self.context,
            seed=self.seed,
        )

    def draft_config(self, name: str) -> DraftConfig:
        kind, layers = _NAME.match(name).groups()
        feats = tuple(range(max(self.n_layers - 1, 1)))[-3:]  # up to 3 blocks, never the last (paper)
        return DraftConfig(
            kind=kind,
            layers=int(layers),
            gamma=self.gamma,
            feature_layers=feats,
            markov=self.markov if kind == "dspark" else "none",
            rank=self.rank,
            conf_detach=self.conf_detach,
            decay=self.decay,
            anchors=self.anchors,
            ttt=self.ttt,
            seed=self.seed,
        )


PRESETS = {
    "full": TrainConfig(),
    "tiny": TrainConfig(
        d_model=32,
        n_layers=2,
        n_heads=2,
        context=48,
        target_steps=12,
        target_batch=4,
        drafter_steps=6,
        drafter_batch=2,
        drafters=("eagle1", "dflash1", "dspark1"),
        anchors=4,
        ttt=1,
        rank=16,
        sts_prompts=2,
        sts_prompt_len=16,
        sts_new_tokens=16,
        threads=1,
        data=DataConfig(code_bytes=60_000, prose_bytes=60_000, math_bytes=60_000),
        gen_sequences=8,
        gen_prompt_len=8,
    ),
}


def resolve(preset: str = "full", config_file: str | None = None, sets: list[str] = ()) -> TrainConfig:
    """PRESETS[preset], then the [train] / [data] keys of a TOML file, then `key=value` overrides."""
    if preset not in PRESETS:
        raise InputError(f"unknown preset {preset!r} (choose from {', '.join(PRESETS)})", field="preset")
    base = dataclasses.asdict(PRESETS[preset])
    if config_file:
        doc = inputs.load_toml(config_file, what="train config")  # regular file, capped, bounded parse
        with inputs.reading(config_file):
            base.update(inputs.mapping(doc.get("train", {}), field="train"))
            base["data"] = {**base["data"], **inputs.mapping(doc.get("data", {}), field="data")}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep:
            raise InputError(f"expected key=value, got {item!r}", field="--set")
        target, name = (base["data"], key[5:]) if key.startswith("data.") else (base, key)
        if name not in target:
            raise InputError("unknown key", field=key)
        try:
            target[name] = tomllib.loads(f"v = {value}")["v"]
        except (tomllib.TOMLDecodeError, ValueError, RecursionError, KeyError):
            target[name] = value
    base["drafters"] = (
        tuple(base["drafters"].split(",")) if isinstance(base["drafters"], str) else tuple(base["drafters"])
    )
    try:
        return TrainConfig(**{**base, "data": DataConfig(**base["data"])})
    except TypeError as err:
        raise InputError(str(err), field="config") from None


def dump_toml(cfg: TrainConfig) -> str:
    def fmt(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        return (
            "[" + ", ".join(fmt(x) for x in v) + "]"
            if isinstance(v, tuple | list)
            else (f'"{v}"' if isinstance(v, str) else repr(v))
        )

    d = dataclasses.asdict(cfg)
    data = d.pop("data")
    lines = ["[train]"] + [f"{k} = {fmt(v)}" for k, v in d.items()] + ["", "[data]"]
    return "\n".join(lines + [f"{k} = {fmt(v)}" for k, v in data.items()]) + "\n"
