"""`specbed engine profile`: verify-step latency vs total verify tokens B, measured in the real engine.

Role: the engine's own cost table. For each batch size R (`requests`) and each verify length ℓ = 0..γ, the
engine decodes R mixed-domain requests with policy fixed k = ℓ; every step where all R requests verified
exactly ℓ drafts (first steps excluded: they prefill) is timed, and the step's verify half — everything but
the drafter's propose: target forward over B = R·(1 + ℓ) tokens, sampling, rejection sampling, commit and
the Python around them — is its wall time minus the timed propose. The median (or, with statistic "mean",
the mean: the expected cost a simulator should charge, outliers and all) over those steps is the latency
at B. Points measured at several R with the same B are averaged. The drafter's own seconds per step (same
statistic, by R) are returned too, R counted as the requests the drafter ran for (StepOutput.drafting): for
the batch sizes profiled from their clean steps, for smaller R from the drain tail's steps; the simulator
prices drafting from them (twin.cli: a `requests,seconds` draft cost).

Terms, each measured in its own module: the drafter's intake of the drafts verified the step before
(engine.measure.intake: `intake_s`, `intake_tokens`; sim drafter.intake_seconds / intake_tokens), the
padded verify slots of a ragged step (engine.measure.padding: `pad_s`; sim server.pad_token_seconds), every
row's KV padded to the step's longest context (engine.measure.context: `context_verify_s`,
`context_draft_s`; sim server / drafter.padded_context_seconds; with `context` set every step is first moved
to that longest context) and the per-join excess (engine.measure.joins, with `extra_requests` > 0:
`join_s`, by R). The profile field ↔ config key mapping is `specsched.stepcost.TERMS`.

Clock: "process" (this process's CPU seconds; the default on the CPU, where other jobs share the cores) or
"wall" (needed on CUDA); see engine.measure.rollout.

Output: a `specsched.contracts.profile.Profile` (re-exported here), the measured-profile CSV of the contract:
`tokens,seconds` preceded by `#` comment lines naming the device, torch version, drafter and the draft (and
join) seconds by R. `Profile.steps` holds the same measurements as specbed's measured-step rows
(`specsched.measured.write_steps`: one decode row per R and ℓ, one draft row per R and ℓ over R·γ drafted
positions; context = R·(prompt_len + new_tokens/2), the mean KV held), for `specbed cost fit`.

May import: numpy, torch, stdlib, specsched (incl. specsched.contracts), engine.* (never sim).
(`longest_context`, `moved`, `padding_seconds`, `intake_tokens` are re-exported from their term modules.)
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field

import numpy as np
import torch

from engine.lm.checkpoint import Bundle
from engine.lm.data import DOMAINS, Corpus
from engine.lm.drafters import runtime_drafter
from engine.measure.context import context_slopes, longest_context, moved
from engine.measure.intake import intake_fit, intake_tokens
from engine.measure.joins import join_excess
from engine.measure.padding import padding_seconds
from engine.measure.rollout import engine_config, run_rollout
from engine.measure.stats import requests_for
from specsched.contracts.profile import Profile


@dataclass(frozen=True)
class ProfileConfig:
    """requests: batch sizes R to profile; gamma: largest ℓ; prompt/new tokens of each request (bytes);
    drafter: which trained drafter drafts; seed: prompts and noise; statistic: "median" or "mean" of the
    clean steps' seconds; extra_requests: requests beyond R that join mid-run (the join cost; 0 = none);
    context: the longest context (tokens) to report every step at (0: none, the intercept the simulator's
    server.padded_context_seconds builds on), None = as the rollouts ran (engine.measure.context)."""

    requests: tuple[int, ...] = (8,)
    gamma: int = 7
    prompt_len: int = 48
    new_tokens: int = 48
    drafter: str = "dspark2"
    seed: int = 11
    device: str = "cpu"
    clock: str = "wall"
    statistic: str = "median"
    extra_requests: int = 0
    context: float | None = None

    def __post_init__(self) -> None:
        ok = isinstance(self.context, (int, float)) and not isinstance(self.context, bool)
        if self.context is not None and not (ok and 0 <= self.context < float("inf")):
            raise ValueError(f"ProfileConfig field 'context': a number of tokens >= 0, got {self.context!r}")
        if self.extra_requests < 0:
            raise ValueError(f"ProfileConfig field 'extra_requests': >= 0, got {self.extra_requests}")
        if self.statistic not in ("median", "mean"):
            raise ValueError(f"ProfileConfig field 'statistic': median or mean, got {self.statistic!r}")
        if not self.requests or min(self.requests) < 1:
            raise ValueError(f"ProfileConfig field 'requests': positive batch sizes, got {self.requests}")
        if self.clock not in ("wall", "process"):
            raise ValueError(f"ProfileConfig field 'clock': wall or process, got {self.clock!r}")
        if self.gamma < 0 or self.prompt_len < 2 or self.new_tokens < 4:
            raise ValueError("ProfileConfig fields: gamma >= 0, prompt_len >= 2, new_tokens >= 4")


def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return platform.processor() or platform.machine()


def mixed_requests(
    corpus: Corpus, n: int, prompt_len: int, new_tokens: int, seed: int, rid0: int = 0, split: str = "test"
):
    """n requests cycling through the domains (code, prose, math, code, ...)."""
    per = {
        d: requests_for(corpus, d, -(-n // len(DOMAINS)), prompt_len, new_tokens, seed=seed + i, split=split)
        for i, d in enumerate(DOMAINS)
    }
    out = []
    for i in range(n):
        r = per[DOMAINS[i % len(DOMAINS)]][i // len(DOMAINS)]
        out.append(type(r)(rid0 + i, r.prompt, r.max_new_tokens, r.params, seed=r.seed))
    return out


def warm_up(
    bundle: Bundle, corpus: Corpus, drafter: str, r: int, gamma: int, prompt_len: int, device: str = "cpu"
) -> None:
    """One short discarded rollout: the first torch calls of a process are slow (allocator, dispatch)."""
    max_len = bundle.config.max_len
    target = bundle.target(device)
    d = runtime_drafter(
        bundle.net(drafter), target, slots=r, max_len=max_len, temps=bundle.drafters[drafter][1]
    )
    reqs = mixed_requests(corpus, r, prompt_len, 24, seed=99)
    ecfg = engine_config(device, gamma=gamma, policy="fixed", policy_params={"k": gamma}, max_running=r)
    run_rollout(target, d, ecfg, reqs, max_len=max_len)


def profile(
    bundle: Bundle,
    corpus: Corpus,
    cfg: ProfileConfig,
    progress=None,
    warm: bool = True,
    probe=None,
    probe_every: int = 8,
) -> Profile:
    """Measure the verify latency at B = R·(1 + ℓ) for every R in cfg.requests and ℓ = 0..γ (after one
    discarded warm-up rollout unless `warm` is False); with a `probe` (engine.measure.rollout.SpeedProbe)
    timed every `probe_every` steps, `Profile.probe_s` is its mean time (how fast the machine ran)."""
    max_len = bundle.config.max_len
    if cfg.prompt_len + cfg.new_tokens + cfg.gamma + 1 > max_len:
        raise ValueError(f"profile: prompt_len + new_tokens + gamma + 1 exceeds the context {max_len}")
    stat = np.median if cfg.statistic == "median" else np.mean
    if warm:
        warm_up(bundle, corpus, cfg.drafter, max(cfg.requests), cfg.gamma, cfg.prompt_len, cfg.device)
    runs = _rollouts(bundle, corpus, cfg, probe, probe_every, progress)
    probes = [ro.probe_s for _, _, ro in runs]
    ref = float(np.concatenate(probes).mean()) if sum(p.size for p in probes) else 0.0
    slopes = context_slopes(runs, [_clean(r, k, ro, cfg.prompt_len) for r, k, ro in runs])
    if (
        cfg.context is not None
    ):  # every step moved to the longest context cfg.context (engine.measure.context)
        runs = [(r, k, moved(ro, slopes[r], cfg.context, cfg.prompt_len)) for r, k, ro in runs]
    tally = _Tally()
    for r, k, ro in runs:
        tally.add(cfg, stat, r, k, ro, progress)
    tokens = np.array(sorted(tally.points), dtype=np.int64)
    seconds = np.array([float(np.mean(tally.points[b])) for b in tokens])
    draft_s = {n: float(stat(v)) for n, v in tally.by_requests.items() if n not in tally.draft}
    draft_s.update({r: float(stat(v)) for r, v in tally.draft.items()})
    fits = {r: intake_fit(r, pairs) for r, pairs in tally.intake.items()}
    context = int(cfg.prompt_len + cfg.new_tokens / 2)
    pads = {r: padding_seconds(bundle.target(cfg.device), r, cfg.gamma, context, probe) for r in cfg.requests}
    return Profile(
        tokens,
        seconds,
        dict(sorted(draft_s.items())),
        [tally.counts[int(b)] for b in tokens],
        _note(cfg),
        {r: float(np.mean(v)) for r, v in tally.joins.items() if v},
        tally.steps,
        intake_s={r: f[0] for r, f in fits.items()},
        intake_tokens={r: f[1] for r, f in fits.items()},
        probe_s=ref,
        pad_s=pads,
        context_verify_s={r: v[0] for r, v in slopes.items()},
        context_draft_s={r: v[1] for r, v in slopes.items()},
        context_ref=cfg.context,
    )


@dataclass
class _Tally:
    """What `profile` collects over its fixed-ℓ rollouts: verify seconds by B (and clean steps counted),
    draft seconds by R (clean steps; `by_requests`: by drafting requests, the drain tail's too), per-join
    excess by R, intake pairs (drafts verified the step before, draft seconds) by R, measured-step rows."""

    points: dict[int, list[float]] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)
    draft: dict[int, list[float]] = field(default_factory=dict)
    joins: dict[int, list[float]] = field(default_factory=dict)
    by_requests: dict[int, list[float]] = field(default_factory=dict)
    intake: dict[int, list[tuple[np.ndarray, np.ndarray]]] = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)

    def add(self, cfg: ProfileConfig, stat, r: int, k: int, ro, progress) -> None:
        """One rollout at R = r, ℓ = k."""
        ok, verify, draft_k, _ = _clean(r, k, ro, cfg.prompt_len)
        b = r * (1 + k)
        self.points.setdefault(b, []).append(float(stat(verify)))
        ctx = r * (cfg.prompt_len + cfg.new_tokens / 2)
        for phase, tokens, secs in (("decode", b, verify), ("draft", r * cfg.gamma, draft_k)):
            row = {"tp": 1, "requests": r, "tokens": tokens, "context_tokens": ctx}
            self.steps.append(dict(row, phase=phase, seconds=float(stat(secs))))
        if cfg.extra_requests:
            self.joins.setdefault(r, []).extend(join_excess(ro, r, k, float(stat(verify)), stat))
        self.counts[b] = self.counts.get(b, 0) + int(ok.sum())
        self.draft.setdefault(r, []).extend(draft_k.tolist())
        self.intake.setdefault(r, []).append((intake_tokens(ro)[ok], draft_k))
        _draft_by_requests(ro, self.by_requests)
        if progress:
            progress(
                f"R={r} l={k}: B={b} verify {stat(verify) * 1e3:.2f} ms, "
                f"draft {stat(draft_k) * 1e3:.2f} ms ({int(ok.sum())} steps)"
            )


def _note(cfg: ProfileConfig) -> str:
    note = (
        f"device {cfg.device} ({_device_name(cfg.device)}), {cfg.clock} clock, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, drafter {cfg.drafter}, R in {list(cfg.requests)}, "
        f"gamma {cfg.gamma}, {cfg.statistic} of clean steps"
    )
    if cfg.context is not None:
        note += f"; every step moved to longest context {cfg.context:g}"
    return note


def _clean(r: int, k: int, ro, prompt_len: int):
    """(mask over steps, verify seconds, draft seconds, longest context) of the clean steps of a fixed-ℓ
    rollout: all R running, every request verifying exactly ℓ = k, none on its first step."""
    st, rs = ro.steps, ro.request_steps
    ok = (st["requests"] == r).copy()
    bad = (rs["length"] != k) | rs["first"]
    ok[np.unique(rs["step"][bad])] = False
    if not ok.any():
        raise ValueError(f"profile: no clean step at R={r}, l={k} (raise new_tokens)")
    verify = st["end_s"][ok] - st["start_s"][ok] - st["draft_s"][ok]
    return ok, verify, st["draft_s"][ok], longest_context(ro, prompt_len)[ok]


def _rollouts(bundle: Bundle, corpus: Corpus, cfg: ProfileConfig, probe, probe_every: int, progress):
    """[(R, ℓ, Rollout)]: the fixed-ℓ rollouts of the profile, every R of cfg.requests and ℓ = 0..γ."""
    net, temps = bundle.net(cfg.drafter), bundle.drafters[cfg.drafter][1]
    max_len = bundle.config.max_len
    out = []
    for r in cfg.requests:
        reqs = mixed_requests(corpus, r + cfg.extra_requests, cfg.prompt_len, cfg.new_tokens, cfg.seed)
        for k in range(cfg.gamma + 1):
            ecfg = engine_config(
                cfg.device, gamma=cfg.gamma, policy="fixed", policy_params={"k": k}, max_running=r
            )
            target = bundle.target(cfg.device)
            drafter = runtime_drafter(net, target, slots=r, max_len=max_len, temps=temps)
            ro, _ = run_rollout(
                target,
                drafter,
                ecfg,
                reqs,
                max_len=max_len,
                clock=cfg.clock,
                probe=probe,
                probe_every=probe_every,
            )
            out.append((r, k, ro))
            if progress:
                progress(f"R={r} l={k}: {ro.steps['end_s'].size} steps decoded")
    return out


def _draft_by_requests(ro, acc: dict[int, list[float]]) -> None:
    """Append to acc[n] the draft seconds of every step whose drafter ran for n requests (StepOutput's
    `drafting`, as the run being priced counts it), a join's step and the one after it excluded (the drafter
    takes in the prompt's features there): the R·γ-full steps and the drain tail's smaller batches."""
    st, rs = ro.steps, ro.request_steps
    n = st["end_s"].size
    joined = np.zeros(n, dtype=bool)
    joined[np.unique(rs["step"][rs["first"]])] = True
    clean = ~joined & ~np.concatenate([[True], joined[:-1]]) & (st["drafting"] > 0)
    for k, secs in zip(st["drafting"][clean].tolist(), st["draft_s"][clean].tolist()):
        acc.setdefault(k, []).append(secs)


__all__ = [
    "Profile",
    "ProfileConfig",
    "intake_tokens",
    "longest_context",
    "mixed_requests",
    "moved",
    "padding_seconds",
    "profile",
    "warm_up",
]
