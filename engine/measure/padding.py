"""The padding term of an engine profile: a ragged step's rows padded to its longest verify length.

Role: the engine runs its MLPs on the packed tokens but attention over rows padded to the longest, so a
step whose requests verify different ℓ costs more than its Σ(1 + ℓ) tokens. `padding_seconds` times the
target's forward over R rows of which one carries 1 + γ tokens and the others one, against uniform forwards
of one and two tokens a row interpolated to the same total: the difference per padded slot is the
profile's `pad_s` (sim server.pad_token_seconds).

May import: numpy, torch, stdlib, engine.* (never sim).
"""

from __future__ import annotations

import numpy as np
import torch

from engine.step import CLOCKS


def padding_seconds(target, r: int, gamma: int, context: int, probe=None, reps: int = 31) -> float:
    """Seconds per padded verify slot of `target`'s forward (module doc): medians of `reps`
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
