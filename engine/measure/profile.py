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
prices drafting from them (specbed.fidelity: a `requests,seconds` draft cost).

Intake: a draft pass after a step that verified more drafts costs more (measured on the CPU: regressed
jointly on the drafts each request accepted and the drafts it verified in its previous step, the draft
seconds follow the verified ones, about 5 µs per draft, and not the accepted ones; the verify forward's size
carries over into the next pass). Over the clean steps at each profiled R (all ℓ), the draft seconds are
regressed on Σ of the drafts each request verified in its previous step: the slope (seconds per draft,
floored at 0) and the mean drafts per drafting request of those steps go into the profile (`intake_s`,
`intake_tokens`; sim drafter.intake_seconds / intake_tokens), so a twin charges a long-verifying policy's
dearer draft passes and an `ar` run's cheaper ones.

Padding: the engine runs its MLPs on the packed tokens but attention over rows padded to the longest, so a
step whose requests verify different ℓ costs more than its Σ(1 + ℓ) tokens. `padding_seconds` times the
target's forward over R rows of which one carries 1 + γ tokens and the others one, against uniform forwards
of one and two tokens a row interpolated to the same total: the difference per padded slot is the
profile's `pad_s` (sim server.pad_token_seconds).

Context: attention runs over every row's KV padded to the step's longest context, so a step costs more
the longer its longest request (measured at R = 8 on the CPU: about 2.5–6 µs a token of longest context
for the verify half, 2–5 µs for the draft pass). The profile's requests start together and run in
lockstep, while a closed-loop workload's drift apart. The least-squares slopes of the clean steps' verify
and draft seconds on their longest context (`longest_context`), fitted within each ℓ and pooled over them,
per padded KV slot (R × the longest context), go into the profile (`context_verify_s`, `context_draft_s`;
sim server.padded_context_seconds charges their sum). With `context` set, every step of every rollout is
first moved to that longest context along them (`moved`): `context = 0` gives the intercept a twin adds
its own steps' padded context to; None keeps the steps as measured.

Joins (`extra_requests` > 0): each run decodes R + extra requests, R at a time, so the extra ones join one
by one as the first finish; a join step (a request's first step: its whole prompt is fed with the others'
drafts) costs more than its tokens, and the step after it the drafter takes in the prompt's features. The
per-join excess is the mean over join steps of (verify − the clean steps' statistic at that ℓ) / joins,
plus the same for the draft seconds of the steps right after (`join_s`, by R).

Clock: "process" (this process's CPU seconds; the default on the CPU, where other jobs share the cores) or
"wall" (needed on CUDA); see engine.measure.rollout.

Output: a `specsched.contracts.profile.Profile` (re-exported here), the measured-profile CSV of the contract:
`tokens,seconds` preceded by `#` comment lines naming the device, torch version, drafter and the draft (and
join) seconds by R. `Profile.steps` holds the same measurements as specbed's measured-step rows
(`specsched.measured.write_steps`: one decode row per R and ℓ, one draft row per R and ℓ over R·γ drafted
positions; context = R·(prompt_len + new_tokens/2), the mean KV held), for `specbed cost fit`.

May import: numpy, torch, stdlib, specsched (incl. specsched.contracts), engine.* (never sim).
"""

from __future__ import annotations

import dataclasses
import platform
from dataclasses import dataclass

import numpy as np
import torch

from engine.lm.checkpoint import Bundle
from engine.lm.data import DOMAINS, Corpus
from engine.lm.drafters import runtime_drafter
from engine.measure.rollout import engine_config, run_rollout
from engine.measure.stats import requests_for
from engine.step import CLOCKS
from specsched.contracts.profile import Profile


@dataclass(frozen=True)
class ProfileConfig:
    """requests: batch sizes R to profile; gamma: largest ℓ; prompt/new tokens of each request (bytes);
    drafter: which trained drafter drafts; seed: prompts and noise; statistic: "median" or "mean" of the
    clean steps' seconds; extra_requests: requests beyond R that join mid-run (the join cost; 0 = none);
    context: the longest context (tokens) to report every step at (0: none, the intercept the simulator's
    server.padded_context_seconds builds on), None = as the rollouts ran (module doc, "Context")."""

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
    points: dict[int, list[float]] = {}
    counts: dict[int, int] = {}
    draft: dict[int, list[float]] = {}
    if warm:
        warm_up(bundle, corpus, cfg.drafter, max(cfg.requests), cfg.gamma, cfg.prompt_len, cfg.device)
    joins: dict[int, list[float]] = {}
    by_requests: dict[int, list[float]] = {}  # draft seconds by drafting requests, the drain tail's too
    intake: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}  # (extra tokens, draft seconds) by R
    steps: list[dict] = []
    runs = _rollouts(bundle, corpus, cfg, probe, probe_every, progress)
    probes = [ro.probe_s for _, _, ro in runs]
    ref = float(np.concatenate(probes).mean()) if sum(p.size for p in probes) else 0.0
    slopes = _context_slopes(runs, [_clean(r, k, ro, cfg.prompt_len) for r, k, ro in runs])
    if cfg.context is not None:  # every step moved to the longest context cfg.context (module doc)
        runs = [(r, k, moved(ro, slopes[r], cfg.context, cfg.prompt_len)) for r, k, ro in runs]
    for r, k, ro in runs:
        ok, verify, draft_k, _ = _clean(r, k, ro, cfg.prompt_len)
        b = r * (1 + k)
        points.setdefault(b, []).append(float(stat(verify)))
        ctx = r * (cfg.prompt_len + cfg.new_tokens / 2)
        for phase, tokens, secs in (("decode", b, verify), ("draft", r * cfg.gamma, draft_k)):
            row = {"tp": 1, "requests": r, "tokens": tokens, "context_tokens": ctx}
            steps.append(dict(row, phase=phase, seconds=float(stat(secs))))
        if cfg.extra_requests:
            joins.setdefault(r, []).extend(_join_excess(ro, r, k, float(stat(verify)), stat))
        counts[b] = counts.get(b, 0) + int(ok.sum())
        draft.setdefault(r, []).extend(draft_k.tolist())
        intake.setdefault(r, []).append((intake_tokens(ro)[ok], draft_k))
        _draft_by_requests(ro, by_requests)
        if progress:
            progress(
                f"R={r} l={k}: B={b} verify {stat(verify) * 1e3:.2f} ms, "
                f"draft {stat(draft_k) * 1e3:.2f} ms ({int(ok.sum())} steps)"
            )
    tokens = np.array(sorted(points), dtype=np.int64)
    seconds = np.array([float(np.mean(points[b])) for b in tokens])
    note = (
        f"device {cfg.device} ({_device_name(cfg.device)}), {cfg.clock} clock, torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, drafter {cfg.drafter}, R in {list(cfg.requests)}, "
        f"gamma {cfg.gamma}, {cfg.statistic} of clean steps"
    )
    if cfg.context is not None:
        note += f"; every step moved to longest context {cfg.context:g}"
    draft_s = {n: float(stat(v)) for n, v in by_requests.items() if n not in draft}
    draft_s.update({r: float(stat(v)) for r, v in draft.items()})
    fits = {r: _intake_fit(r, pairs) for r, pairs in intake.items()}
    context = int(cfg.prompt_len + cfg.new_tokens / 2)
    pads = {r: padding_seconds(bundle.target(cfg.device), r, cfg.gamma, context, probe) for r in cfg.requests}
    return Profile(
        tokens,
        seconds,
        dict(sorted(draft_s.items())),
        [counts[int(b)] for b in tokens],
        note,
        {r: float(np.mean(v)) for r, v in joins.items() if v},
        steps,
        intake_s={r: f[0] for r, f in fits.items()},
        intake_tokens={r: f[1] for r, f in fits.items()},
        probe_s=ref,
        pad_s=pads,
        context_verify_s={r: v[0] for r, v in slopes.items()},
        context_draft_s={r: v[1] for r, v in slopes.items()},
        context_ref=cfg.context,
    )


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


def longest_context(ro, prompt_len: int) -> np.ndarray:
    """float64[steps]: per step, the longest context among its requests before it (prompt_len + the tokens
    each emitted in its earlier steps, accepted drafts + 1 a step): the KV length the engine pads to."""
    rs = ro.request_steps
    order = np.lexsort((rs["step"], rs["rid"]))  # by request, then step
    rid, inc = rs["rid"][order], rs["accepted"][order].astype(np.float64) + 1.0
    done = np.cumsum(inc) - inc  # emitted before each row, across requests
    start = np.flatnonzero(np.concatenate([[True], rid[1:] != rid[:-1]]))
    done -= np.repeat(done[start], np.diff(np.append(start, rid.size)))  # ... within its own request
    out = np.zeros(ro.steps["end_s"].size)
    np.maximum.at(out, rs["step"][order], prompt_len + done)
    return out


def _context_slopes(runs, clean) -> dict[int, tuple[float, float]]:
    """{R: (verify, draft) seconds per padded KV slot}: the least-squares slope of the clean steps' seconds
    on their longest context, within each ℓ (every ℓ's steps centred on their own means, so the ℓ-to-ℓ
    cost differences do not leak in), pooled over ℓ, divided by R (a step pads R rows to the longest),
    floored at 0."""
    acc: dict[int, np.ndarray] = {}
    for (r, _, _), (_, verify, draft, longest) in zip(runs, clean):
        x = longest - longest.mean()
        a = acc.setdefault(r, np.zeros(3))
        a += (float(x @ x), float(x @ (verify - verify.mean())), float(x @ (draft - draft.mean())))
    # floored at 0: a longer context never makes a step cheaper (a negative fit is noise)
    return {
        r: (max(a[1], 0.0) / a[0] / r, max(a[2], 0.0) / a[0] / r) if a[0] > 0 else (0.0, 0.0)
        for r, a in acc.items()
    }


def moved(ro, slopes: tuple[float, float], context: float, prompt_len: int):
    """`ro` with every step's verify and draft seconds moved to longest context `context` along `slopes`
    (seconds per padded KV slot: the step's requests, resp. drafting requests, × its longest context)."""
    st = ro.steps
    gap = context - longest_context(ro, prompt_len)
    draft = st["draft_s"] + slopes[1] * st["drafting"] * gap
    verify = st["end_s"] - st["start_s"] - st["draft_s"] + slopes[0] * st["requests"] * gap
    return dataclasses.replace(ro, steps=dict(st, draft_s=draft, end_s=st["start_s"] + draft + verify))


def padding_seconds(target, r: int, gamma: int, context: int, probe=None, reps: int = 31) -> float:
    """Seconds per padded verify slot of `target`'s forward (module doc, "Padding"): medians of `reps`
    interleaved forwards (process clock) over r rows at `context` tokens of KV, floored at 0; scaled to
    probe-normalized seconds with a `probe` (its calibrated time / its median time meanwhile)."""
    from engine.drafter import pad_batch
    from engine.model import KVCache

    if r < 2 or gamma < 1:
        return 0.0
    cfg = target.config
    context = max(0, min(context, cfg.max_len - gamma - 1))
    dev = next(iter(target.w.values())).device
    cache = KVCache(cfg, r, context + gamma + 1, device=dev)
    slots = torch.arange(r, device=dev)
    shapes = {"one": [1] * r, "two": [2] * r, "ragged": [gamma + 1] + [1] * (r - 1)}
    batches = {k: pad_batch([[1] * n for n in v], dev) for k, v in shapes.items()}
    now = CLOCKS["process"]
    times: dict[str, list[float]] = {k: [] for k in (*shapes, "probe")}
    with torch.inference_mode():
        for _ in range(reps):
            for key, (tokens, n_valid) in batches.items():
                cache.lengths[:] = context
                t = now()
                target.run(tokens, n_valid.to(dev), slots, cache, hidden=True)
                times[key].append(now() - t)
            if probe is not None:
                t = now()
                probe()
                times["probe"].append(now() - t)
    med = {k: float(np.median(v)) if v else 0.0 for k, v in times.items()}
    uniform = med["one"] + (med["two"] - med["one"]) * gamma / r  # Σ = r + γ tokens, linear between r and 2r
    per_slot = max(med["ragged"] - uniform, 0.0) / ((r - 1) * gamma)
    return per_slot * (probe.reference / med["probe"]) if probe is not None and med["probe"] else per_slot


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


def intake_tokens(ro) -> np.ndarray:
    """float64[steps]: per step, Σ over its requests of the drafts each verified in its previous step (0
    after a request's first step, its prefill: the prompt's intake is the join cost's)."""
    rs = ro.request_steps
    order = np.lexsort((rs["step"], rs["rid"]))  # by request, then step
    rid, acc, first = rs["rid"][order], rs["length"][order], rs["first"][order]
    prev = np.zeros(order.size)
    follows = (rid[1:] == rid[:-1]) & ~first[:-1]
    prev[1:][follows] = acc[:-1][follows]
    out = np.zeros(ro.steps["end_s"].size)
    np.add.at(out, rs["step"][order], prev)
    return out


def _intake_fit(r: int, pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[float, float]:
    """(seconds per extra token taken in, floored at 0; mean extra tokens per drafting request) from the
    clean steps' (extra tokens, draft seconds) at R = r: the least-squares slope."""
    x = np.concatenate([p[0] for p in pairs])
    y = np.concatenate([p[1] for p in pairs])
    var = float(np.var(x)) if x.size > 1 else 0.0
    slope = float(np.mean((x - x.mean()) * (y - y.mean()))) / var if var > 0 else 0.0
    return max(slope, 0.0), float(x.mean()) / r if x.size else 0.0


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


def _join_excess(ro, r: int, k: int, clean_verify: float, stat) -> list[float]:
    """Per-join extra seconds of one fixed-ℓ run: for every step where j ≥ 1 requests joined (all R running,
    none capped below ℓ = k), (verify − clean_verify) / j plus, for the step right after it (when it had no
    join), (draft − the clean steps' draft statistic) / j."""
    st, rs = ro.steps, ro.request_steps
    n = st["end_s"].size
    j = np.zeros(n)
    np.add.at(j, rs["step"][rs["first"]], 1)
    capped = np.zeros(n, dtype=bool)
    capped[np.unique(rs["step"][rs["length"] != k])] = True
    full = (st["requests"] == r) & ~capped
    full[0] = False  # the very first step prefills every request at once
    verify = st["end_s"] - st["start_s"] - st["draft_s"]
    clean = full & (j == 0) & (np.concatenate([[0.0], j[:-1]]) == 0)
    if not clean.any():
        return []
    clean_draft = float(stat(st["draft_s"][clean]))
    out = []
    for s in np.flatnonzero(full & (j > 0)):
        extra = verify[s] - clean_verify
        if s + 1 < n and full[s + 1] and j[s + 1] == 0:
            extra += st["draft_s"][s + 1] - clean_draft
        out.extend([extra / j[s]] * int(j[s]))
    return out
