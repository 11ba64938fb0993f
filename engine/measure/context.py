"""The context term of an engine profile: steps cost more the longer their longest request (KV padding).

Role: `longest_context` per step, `context_slopes` (seconds per padded KV slot: `Profile.context_verify_s`,
`context_draft_s`) and `moved` (a rollout's steps moved to one longest context). Attention runs over every
row's KV padded to the step's longest context, so a step costs more the longer its longest request. The
profile's requests start together and run in lockstep, while a closed-loop workload's drift apart. The
least-squares slopes of the clean steps' verify and draft seconds on their longest context, fitted within
each ℓ and pooled over them, per padded KV slot (R × the longest context), go into the profile (sim
server / drafter.padded_context_seconds). With `ProfileConfig.context` set, every step of every rollout is
first moved to that longest context along them (`moved`): `context = 0` gives the intercept a twin adds its
own steps' padded context to; None keeps the steps as measured.

May import: numpy, stdlib.
"""

from __future__ import annotations

import dataclasses

import numpy as np


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


def context_slopes(runs, clean) -> dict[int, tuple[float, float]]:
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
