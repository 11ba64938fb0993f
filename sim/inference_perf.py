"""inference-perf workloads: the profile file, and the traffic of one profile regenerated.

Role: read a PROFILES.json (the shape of ../shared/real-vllm/workloads.json: `{"workloads": {name:
{"stages": [{"rate", "duration"}], "data": {"type": "shared_prefix", "shared_prefix": {...}},
"load_type": "constant", "observed": {"prompt_len_mean", "prompt_len_range"}}}}`) with one-line errors
naming file and field, and regenerate a profile's requests as kubernetes-sigs/inference-perf sends them:

- arrivals (`load_type` "constant", inference_perf/loadgen/load_timer.py): stage by stage, exactly
  ⌊rate · duration⌋ requests, exponential gaps rescaled to fill the stage's duration; stages back to back.
- prompts (`shared_prefix`, inference_perf/datagen/shared_prefix_datagen.py): `num_unique_system_prompts`
  groups of `num_users_per_system_prompt` users; each user has one fixed prompt, the group's system prompt
  (`system_prompt_len` tokens) then the user's question (`question_len`). Request i goes to user
  perm[i mod users] (a shuffled user order), so every user's prompt repeats, round after round. Prompt
  lengths: the profile's nominal length, or — when the profile gives the lengths observed in the runs
  (the chat template and re-tokenization add a few tokens) — per user uniform over `prompt_len_range`,
  shifted to the observed mean.
- outputs: `output_len` tokens each (the runs use `ignore_eos`).
- prefix blocks: block j of a prompt is the group's system prompt while it lies inside it, else the
  user's own text; keys are chained (`sim.prefix_cache.PrefixCache.chain`), so users of one group share
  their first ⌊system_prompt_len / 16⌋ blocks and a user shares every whole block with their earlier rounds.

May import: numpy, the standard library, `sim.workload`, `sim.prefix_cache`, `specsched.io.errors`,
`specsched.io.safeio`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sim.prefix_cache import PrefixCache
from sim.workload import Workload
from specsched.io import inputs
from specsched.io.errors import InputError


@dataclass(frozen=True)
class Profile:
    """One inference-perf profile. stages: ((rate requests/s, duration s), ...); prompt_tokens: nominal
    system + question; observed_mean / observed_range: prompt lengths seen in the runs (None: unknown)."""

    name: str
    stages: tuple[tuple[float, float], ...]
    groups: int
    users_per_group: int
    system_tokens: int
    question_tokens: int
    output_tokens: int
    observed_mean: float | None = None
    observed_range: tuple[int, int] | None = None

    @property
    def num_requests(self) -> int:
        return sum(int(rate * dur) for rate, dur in self.stages)

    @property
    def duration_s(self) -> float:
        return float(sum(d for _, d in self.stages))


#: upper bound of every number of a profile (a duration in s, a length, a count); a stage rate has its
#: own (sim.bounds' workload.rate): 1e308 overflowed the request count
MAX_FIELD, MAX_RATE = 1e9, 1e6


def _num(
    obj: dict, key: str, path: str, where: str, *, whole: bool = False, lo: float = 0.0, hi: float = MAX_FIELD
) -> float:
    val = obj.get(key) if isinstance(obj, dict) else None
    ok = isinstance(val, (int, float)) and not isinstance(val, bool) and math.isfinite(val) and lo < val <= hi
    if whole and ok:
        ok = int(val) == val
    if not ok:
        need = "a whole number" if whole else "a number"
        raise InputError(
            f"must be {need} in ({lo:g}, {hi:g}], got {val!r}", file=path, field=f"{where}.{key}"
        )
    return int(val) if whole else float(val)


def parse_profile(name: str, raw, path: str) -> Profile:
    """One profile from its JSON object (InputError naming file and field)."""
    where = f"workloads.{name}"
    if not isinstance(raw, dict):
        raise InputError("must be an object", file=path, field=where)
    load = raw.get("load_type", "constant")
    if load not in ("constant", "poisson"):
        raise InputError(
            f"must be 'constant' or 'poisson', got {load!r}", file=path, field=f"{where}.load_type"
        )
    stages = raw.get("stages")
    if not isinstance(stages, list) or not stages:
        raise InputError("must be a non-empty list of {rate, duration}", file=path, field=f"{where}.stages")
    parsed = tuple(
        (
            _num(s, "rate", path, f"{where}.stages[{i}]", hi=MAX_RATE),
            _num(s, "duration", path, f"{where}.stages[{i}]"),
        )
        for i, s in enumerate(stages)
    )
    for i, (r, d) in enumerate(parsed):
        if int(r * d) < 1:  # a stage that sends no request: the run it describes cannot have happened
            raise InputError(
                f"sends no request (rate x duration = {r * d:g} < 1)", file=path, field=f"{where}.stages[{i}]"
            )
    if sum(int(r * d) for r, d in parsed) > 5_000_000:
        raise InputError("more than 5,000,000 requests in all", file=path, field=f"{where}.stages")
    data = raw.get("data")
    sp = data.get("shared_prefix") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("type") != "shared_prefix" or not isinstance(sp, dict):
        raise InputError(
            'must be {"type": "shared_prefix", "shared_prefix": {...}}', file=path, field=f"{where}.data"
        )
    w = f"{where}.data.shared_prefix"
    counts = [
        _num(sp, k, path, w, whole=True) for k in ("num_unique_system_prompts", "num_users_per_system_prompt")
    ]
    if counts[0] * counts[1] > 1_000_000:
        raise InputError("more than 1,000,000 users", file=path, field=w)
    lens = [_num(sp, k, path, w, whole=True, lo=-1) for k in ("system_prompt_len", "question_len")]
    out = _num(sp, "output_len", path, w, whole=True)
    if max(*lens, out) > 1_000_000 or lens[0] + lens[1] < 1:
        raise InputError("prompt and output lengths must be in 1..1,000,000", file=path, field=w)
    mean, rng = _observed(raw.get("observed"), path, f"{where}.observed")
    return Profile(name, parsed, counts[0], counts[1], lens[0], lens[1], out, mean, rng)


def _observed(obs, path: str, where: str) -> tuple[float | None, tuple[int, int] | None]:
    if obs is None:
        return None, None
    means = obs.get("prompt_len_mean") if isinstance(obs, dict) else None
    span = obs.get("prompt_len_range") if isinstance(obs, dict) else None
    nums = (
        isinstance(means, list) and means and all(isinstance(m, (int, float)) and 0 < m < 1e6 for m in means)
    )
    pair = isinstance(span, list) and len(span) == 2 and all(isinstance(v, int) and 0 < v < 1e6 for v in span)
    if not nums or not pair or span[0] > span[1]:
        raise InputError(
            "needs prompt_len_mean (a list of lengths) and prompt_len_range [lo, hi]", file=path, field=where
        )
    return float(np.mean(means)), (int(span[0]), int(span[1]))


def load_profiles(path: str | Path) -> dict[str, Profile]:
    """Every profile of a PROFILES.json (InputError naming the file and field if one is bad)."""
    p = str(path)
    raw = inputs.load_json(path, what="profiles file", nonfinite=True)  # regular, capped, bounded digits
    wls = raw.get("workloads") if isinstance(raw, dict) else None
    if not isinstance(wls, dict) or not wls:
        raise InputError('needs a non-empty "workloads" object', file=p, field="workloads")
    return {name: parse_profile(name, body, p) for name, body in wls.items()}


def arrivals(profile: Profile, rng: np.random.Generator) -> np.ndarray:
    """float64[N] arrival times (s): each stage's exponential gaps rescaled to fill it (module doc)."""
    out, t0 = [], 0.0
    for rate, dur in profile.stages:
        n = int(rate * dur)
        if n == 0:
            t0 += dur
            continue
        gaps = rng.exponential(1.0 / rate, size=n)
        gaps *= dur / gaps.sum()
        out.append(t0 + np.cumsum(gaps))
        t0 += dur
    return np.concatenate(out) if out else np.zeros(0)


def user_prompt_lengths(profile: Profile, rng: np.random.Generator) -> np.ndarray:
    """int64[users]: each user's fixed prompt length (module doc)."""
    users = profile.groups * profile.users_per_group
    nominal = profile.system_tokens + profile.question_tokens
    if profile.observed_range is None:
        return np.full(users, nominal, dtype=np.int64)
    lo, hi = profile.observed_range
    draw = rng.uniform(lo, hi, size=users) - (lo + hi) / 2 + profile.observed_mean
    return np.clip(np.rint(draw), max(lo, 1), hi).astype(np.int64)


def block_keys(profile: Profile, user: int, prompt: int, block_size: int = 16) -> list[int]:
    """The chained block keys of `user`'s prompt of `prompt` tokens (module doc)."""
    group = user // profile.users_per_group
    shared = profile.system_tokens // block_size
    contents = [(0, group, j) if j < shared else (1, user, j) for j in range(prompt // block_size)]
    return PrefixCache.chain(contents)


def generate(profile: Profile, seed: int = 0, block_size: int = 16) -> tuple[Workload, list[list[int]]]:
    """The profile's requests as a `sim.workload.Workload` (domain 0) and each request's block keys."""
    r_arr, r_len, r_perm = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    arr = arrivals(profile, r_arr)
    n = arr.size
    users = profile.groups * profile.users_per_group
    lengths = user_prompt_lengths(profile, r_len)
    who = r_perm.permutation(users)[np.arange(n) % users]
    keys_by_user = [block_keys(profile, u, int(lengths[u]), block_size) for u in range(users)]
    wl = Workload(
        arrival_s=arr,
        input_tokens=lengths[who].astype(np.int64),
        output_tokens=np.full(n, profile.output_tokens, dtype=np.int64),
        domain=np.zeros(n, dtype=np.int64),
        think_s=None,
        clipped=0,
        session=who.astype(np.int64),
    )
    return wl, [keys_by_user[u] for u in who.tolist()]
