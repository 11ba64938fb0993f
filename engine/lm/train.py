"""Train the target and the drafters, calibrate DSpark's confidence head, write the checkpoints.

Role: `python -m engine.lm.train --out engine/checkpoints` (also `specbed engine train`). Seeded and
deterministic (explicit torch.Generators spawned from one numpy SeedSequence;
`torch.use_deterministic_algorithms(True)`; a fixed thread count): the same config on the same machine
gives the same checkpoints. Progress with an ETA goes to stderr.

Phases: (1) the byte-level target (AdamW, warm-up + cosine, next-byte cross-entropy on the three domains,
equal mix); rounded through float16 and saved. (2) drafter data: as the paper regenerates its answers with
the target, the target continues train-split prompts (plain decoding in the engine, temperature 1;
`drafter_data = "text"` uses corpus windows instead). (3) every drafter on the same batches, jointly (one
frozen target forward per batch feeds all of them): EAGLE (engine.lm.eagle), DFlash / DSpark
(engine.lm.parallel). (4) STS: each DSpark drafter decodes held-out (val split) prompts of every domain in
the real engine with all γ drafts verified; per-position temperatures are fit on its raw confidences
(specsched.confidence.fit_sts_measured: `sts_fit = "nll"`, the sequential fit scored by log-loss; "ece",
the paper's ECE grid search) and stored in its checkpoint.

Config: `TrainConfig` (frozen dataclass); `--preset full|tiny`, `--config FILE.toml` and `--set key=value`
override it; the resolved config is saved as `train_config.toml` beside the checkpoints.
`--reuse-target PATH` (a target.pt or a checkpoint directory) skips phase 1: it takes that target instead,
provided it was trained with this config's target fields and data (else one error line); the drafter
phases draw from their own generators, so the drafters come out bit-identical to a full run's. For drafter
experiments: `--reuse-target engine/checkpoints --set drafters=dflash2,dspark2 --out /tmp/x`.

May import: numpy, torch, stdlib, tomllib, specsched, engine.* except engine.measure (the trainer sits
below the measurement code; STS rollouts read the engine's step outputs).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
import tomllib
import zlib
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from engine.lm import checkpoint as ckpt
from engine.lm.data import DOMAINS, Corpus, requests_for
from engine.lm.drafters import runtime_drafter
from engine.lm.target import TargetLM, target_outputs
from engine.lm.trainconfig import PRESETS, TrainConfig, dump_toml, resolve
from engine.step import StepOutput, full_rows
from specsched import confidence
from specsched.io import safeio
from specsched.io.errors import InputError
from specsched.io.progress import Progress

__all__ = ["PRESETS", "TrainConfig", "dump_toml", "main", "resolve", "run"]


def _progress(phase: str, total: int, unit: str, quiet: bool) -> Progress:
    """The shared printer (specsched.io.progress) for one training phase: a line at least every 10 s."""
    return Progress(total, label=f"[train] {phase}", unit=unit, every=10.0, enabled=not quiet)


def _generators(seed, n: int) -> list[torch.Generator]:
    """n torch Generators from np.random.SeedSequence(seed) (seed: int or a list of ints)."""
    states = np.random.SeedSequence(seed).generate_state(n, dtype=np.uint64)
    return [torch.Generator().manual_seed(int(s) & ((1 << 63) - 1)) for s in states]


def _drafter_generators(seed: int, name: str) -> list[torch.Generator]:
    """(init, anchors) generators of one drafter, keyed by its name: a drafter trains the same whichever
    others are trained beside it (the batches are shared and drawn once per step)."""
    return _generators([seed, zlib.crc32(name.encode())], 2)


def _lr(step: int, total: int, peak: float) -> float:
    warm = max(1, total // 20)
    if step < warm:
        return peak * (step + 1) / warm
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(total - warm, 1))))


def _optimizer(params, lr: float) -> torch.optim.Optimizer:
    params = [p for p in params if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    rest = [p for p in params if p.ndim < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
        lr=lr,
        betas=(0.9, 0.95),
    )


def train_target(cfg: TrainConfig, corpus: Corpus, gens, quiet=False) -> tuple[dict, dict]:
    """Float32 weights (rounded through float16) and metrics of a freshly trained target."""
    model = TargetLM(cfg.model_config(), gens[0])
    opt = _optimizer(model.parameters(), cfg.target_lr)
    prog = _progress("target", cfg.target_steps, "steps", quiet)
    losses = []
    for step in range(cfg.target_steps):
        for g in opt.param_groups:
            g["lr"] = _lr(step, cfg.target_steps, cfg.target_lr)
        batch = corpus.batch("train", cfg.target_batch, cfg.context + 1, gens[1])
        logits, _ = model(batch[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        prog.update(step + 1, f"loss {np.mean(losses[-20:]):.3f} nats/byte")
    prog.close()
    weights = ckpt.rounded(model.weights())
    val = {}
    with torch.no_grad():
        for dom in DOMAINS:
            batch = corpus.batch("val", 8, cfg.context + 1, gens[2], domain=dom)
            probs, _ = target_outputs(weights, cfg.model_config(), batch[:, :-1])
            nll = -torch.log(probs.gather(-1, batch[:, 1:, None]).clamp_min(1e-12)).mean()
            val[dom] = float(nll) / math.log(2)
    return weights, {"train_loss_last": float(np.mean(losses[-20:])), "val_bits_per_byte": val}


def generate_data(cfg: TrainConfig, corpus: Corpus, weights: dict, quiet=False) -> torch.Tensor:
    """int64 [gen_sequences, context − 1]: train-split prompts (domains cycling) continued by the target
    itself (the engine's plain decoding, temperature 1, noise keyed by request: deterministic)."""
    from engine.loop import Engine, EngineConfig, Request
    from engine.model import TinyLM

    n, plen = cfg.gen_sequences, cfg.gen_prompt_len
    new = cfg.context - 1 - plen  # prompt + new + 1 <= context (the engine's length check with gamma 0)
    per = -(-n // len(DOMAINS))
    prompts = {
        d: corpus.prompts(d, per, plen, seed=cfg.seed + 200 + i, split="train") for i, d in enumerate(DOMAINS)
    }
    reqs = [Request(i, prompts[DOMAINS[i % 3]][i // 3], new, seed=cfg.seed + 300) for i in range(n)]
    engine = Engine(
        TinyLM(cfg.model_config(), weights), None, EngineConfig(gamma=0, max_running=64), max_len=cfg.context
    )
    prog = _progress("generate", n, "sequences", quiet)
    rows = []
    for start in range(0, n, 64):
        chunk = reqs[start : start + 64]
        out = engine.generate(chunk, speculative=False)
        rows += [list(r.prompt) + out[r.rid] for r in chunk]
        prog.update(start + len(chunk))
    prog.close()
    return torch.tensor(rows, dtype=torch.int64)


def train_drafters(cfg: TrainConfig, corpus: Corpus, weights: dict, gen, quiet=False) -> tuple[dict, dict]:
    """{name: trained net (rounded through float16)}, {name: metrics}; all trained on the same batches,
    drawn with `gen` (a torch.Generator used by nothing else)."""
    mcfg = cfg.model_config()
    dgens = {name: _drafter_generators(cfg.seed, name) for name in cfg.drafters}
    nets = {
        name: ckpt.build_drafter(cfg.draft_config(name), mcfg, weights, dgens[name][0])
        for name in cfg.drafters
    }
    opts = {name: _optimizer(net.parameters(), cfg.drafter_lr) for name, net in nets.items()}
    hist: dict[str, list[dict]] = {name: [] for name in nets}
    data = generate_data(cfg, corpus, weights, quiet) if cfg.drafter_data == "target" else None
    prog = _progress("drafters", cfg.drafter_steps, "steps", quiet)
    for step in range(cfg.drafter_steps):
        if data is None:
            batch = corpus.batch("train", cfg.drafter_batch, cfg.context, gen)
        else:
            batch = data[torch.randint(0, data.shape[0], (cfg.drafter_batch,), generator=gen)]
        probs, hidden = target_outputs(weights, mcfg, batch)
        for name, net in nets.items():
            for g in opts[name].param_groups:
                g["lr"] = _lr(step, cfg.drafter_steps, cfg.drafter_lr)
            loss, metrics = net.loss(batch, probs, hidden, dgens[name][1])
            opts[name].zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opts[name].step()
            hist[name].append({"loss": loss.item(), **metrics})
        prog.update(
            step + 1, " ".join(f"{n}:{np.mean([h['accept'] for h in hist[n][-20:]]):.3f}" for n in nets)
        )
    prog.close()
    out_metrics = {}
    for name, net in nets.items():
        net.load_state_dict(ckpt.rounded(net.state_dict()))
        last = hist[name][-20:]
        out_metrics[name] = {k: float(np.mean([h[k] for h in last])) for k in last[0]}
    return nets, out_metrics


def calibrate(cfg: TrainConfig, corpus: Corpus, weights: dict, net) -> tuple[list[float], dict]:
    """STS temperatures of a DSpark net from engine rollouts on val prompts (all γ verified): the engine's
    step outputs give the raw confidences and accepted drafts of its full request-steps, and
    specsched.confidence fits them (the same fitter `specbed engine eval` uses)."""
    from engine.loop import Engine, EngineConfig

    n = cfg.sts_prompts
    ecfg = EngineConfig(gamma=cfg.gamma, policy="fixed", policy_params={"k": cfg.gamma}, max_running=n)
    confs, accs = [], []

    def keep_full_rows(out: StepOutput) -> None:
        full = full_rows(out.lengths, out.first, cfg.gamma)
        confs.append(out.raw_conf[full])
        accs.append(out.accepted[full])

    for i, dom in enumerate(DOMAINS):
        target = ckpt.Bundle(Path("."), cfg.model_config(), weights, {}).target()
        drafter = runtime_drafter(net, target, slots=n, max_len=cfg.context)
        reqs = requests_for(
            corpus, dom, n, cfg.sts_prompt_len, cfg.sts_new_tokens, seed=cfg.seed + 100 + i, split="val"
        )
        Engine(target, drafter, ecfg, max_len=cfg.context, observers=[keep_full_rows]).generate(reqs)
    conf = np.concatenate(confs) if confs else np.zeros((0, cfg.gamma))
    acc = np.concatenate(accs) if accs else np.zeros(0, dtype=np.int64)
    temps = confidence.fit_sts_measured(conf, acc, cfg.sts_fit)
    q = confidence.confidence_quality(conf, acc, temps)
    return [float(t) for t in temps], {
        "samples": int(acc.size),
        "ece_raw_fit": q["ece_raw_mean"],
        "ece_calibrated_fit": q["ece_calibrated_mean"],
    }


# TrainConfig fields that (with `data`) decide the target: a reused target must agree on all of them.
TARGET_FIELDS = (
    "seed",
    "d_model",
    "n_layers",
    "n_heads",
    "context",
    "target_steps",
    "target_batch",
    "target_lr",
)


def reused_target(cfg: TrainConfig, path: Path) -> tuple[dict, dict]:
    """(float32 weights, meta) of an existing target checkpoint (`path`: target.pt or its directory) that
    this config would have trained; InputError naming the first field that differs."""
    file = path / "target.pt" if path.is_dir() else path
    mcfg, weights, meta = ckpt.load_target(file)
    try:
        doc = tomllib.loads(meta["train_config"])
        old_train, old_data = doc["train"], doc["data"]
    except (KeyError, TypeError, tomllib.TOMLDecodeError) as err:
        raise InputError(f"target checkpoint records no train config ({err})", file=str(file)) from None
    for name in TARGET_FIELDS:
        if old_train.get(name) != getattr(cfg, name):
            raise InputError(
                f"--reuse-target: target trained with {name} = {old_train.get(name)!r}, this config has "
                f"{getattr(cfg, name)!r}",
                file=str(file),
                field=name,
            )
    if old_data != dataclasses.asdict(cfg.data) or mcfg != cfg.model_config():
        raise InputError("--reuse-target: target trained on other data or model config", file=str(file))
    return weights, meta


def run(cfg: TrainConfig, out: Path, quiet: bool = False, reuse_target: Path | None = None) -> dict:
    """Train everything and write `out/target.pt`, `out/<drafter>.pt`, `out/train_config.toml` (with
    `reuse_target`, take that target instead of training one). Runs with `cfg.threads` torch threads and
    deterministic algorithms, restoring both settings afterwards."""
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(cfg.threads)
    torch.use_deterministic_algorithms(True)
    try:
        return _run(cfg, Path(out), quiet, None if reuse_target is None else Path(reuse_target))
    finally:
        torch.set_num_threads(threads)
        torch.use_deterministic_algorithms(deterministic)


def _run(cfg: TrainConfig, out: Path, quiet: bool, reuse_target: Path | None) -> dict:
    t0 = time.perf_counter()
    corpus = Corpus.build(cfg.data)
    # target init, target batches, validation batches, drafter batches: the drafter phases never depend on
    # how much the target phase drew, so a reused target gives the same drafters as a full run.
    gens = _generators(cfg.seed, 4)
    if reuse_target is None:
        weights, tmeta = train_target(cfg, corpus, gens, quiet)
        t_target = time.perf_counter() - t0
        meta = {"train": tmeta, "wall_s": t_target}
    else:
        weights, meta = reused_target(cfg, reuse_target)
        tmeta, t_target = meta["train"], float(meta.get("wall_s", 0.0))
        meta = {"train": tmeta, "wall_s": t_target, "reused_from": str(reuse_target)}
    meta.update(corpus_bytes=corpus.sizes(), data=dataclasses.asdict(cfg.data), train_config=dump_toml(cfg))
    digest = ckpt.save_target(out / "target.pt", cfg.model_config(), weights, meta)
    t1 = time.perf_counter()
    nets, dmeta = train_drafters(cfg, corpus, weights, gens[3], quiet)
    t_drafters = time.perf_counter() - t1
    summary = {"target": {**tmeta, "digest": digest, "wall_s": t_target}, "drafters_wall_s": t_drafters}
    for name, net in nets.items():
        temps, cal = (None, {})
        if net.cfg.kind == "dspark":
            temps, cal = calibrate(cfg, corpus, weights, net)
        ckpt.save_drafter(out / f"{name}.pt", net, digest, {"train": dmeta[name], "sts": cal}, temps)
        summary[name] = {**dmeta[name], **cal, "temps": temps}
    safeio.write_text(out / "train_config.toml", dump_toml(cfg))  # atomic
    summary["wall_s"] = time.perf_counter() - t0
    summary["sizes_bytes"] = {p.name: p.stat().st_size for p in sorted(out.glob("*.pt"))}
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engine.lm.train", description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(ckpt.DEFAULT_DIR), metavar="DIR", help="checkpoint directory")
    parser.add_argument("--preset", default="full", choices=sorted(PRESETS))
    parser.add_argument("--config", help="TOML file with [train] / [data] tables")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--reuse-target",
        metavar="PATH",
        help="take this target.pt (or directory) instead of training one; it must match the config",
    )
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    cfg = resolve(args.preset, args.config, args.set)
    summary = run(cfg, Path(args.out), args.quiet, args.reuse_target and Path(args.reuse_target))
    t = summary["target"]
    print(
        f"target: val bits/byte {', '.join(f'{k} {v:.3f}' for k, v in t['val_bits_per_byte'].items())}"
        f" (train {t['wall_s']:.0f}s{', reused' if args.reuse_target else ''}); drafters (with their"
        f" data) {summary['drafters_wall_s']:.0f}s"
    )
    for name in cfg.drafters:
        s = summary[name]
        extra = f", STS ECE {s['ece_raw_fit']:.4f} -> {s['ece_calibrated_fit']:.4f}" if s.get("temps") else ""
        print(f"{name}: train accept {s['accept']:.3f}{extra}")
    print(
        f"wall {summary['wall_s']:.0f}s; sizes "
        + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in summary["sizes_bytes"].items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
