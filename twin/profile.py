"""The engine profiles `specbed fidelity` takes around each engine run, and what it derives from them.

Role: profile the engine in the workload's regime (`profile_now`, every step moved to no context), average
the profiles bracketing a run (`bracketed`), the draft cost by drafting requests the twin and the adaptive
engine price a draft pass with (`write_draft_cost`), the engine policy's table at the closed loop's steady
longest context (`at_context`, `steady_longest`); the measured step-cost terms are read through
`specsched.stepcost.profile_terms` (one mapping, profile field ↔ config key).
`ctx` is a `twin.run.Setup` (args, bundle, corpus, clock, probe, n).

May import: numpy, stdlib, specsched, engine.*, twin.compare.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from specsched.contracts import Profile
from specsched.io import safeio
from specsched.stepcost import profile_terms
from twin.compare import level_drift

INTAKE = ("intake_s", "intake_tokens")  # the Profile fields averaged over the profiles around a run


def at_context(prof: Profile, n: int, context: float) -> Profile:
    """`prof` (moved to no context) as the engine's policy plans on it: its R = n steps at longest context
    `context` again (the closed loop's steady one, `steady_longest`), the draft pass's context part
    carried in the table (a fixed cost either way) and the draft seconds left at no context, so the twin's
    policy, which takes its draft seconds from the draft cost CSV, plans on the same step seconds."""
    if prof.context_ref != 0:
        return prof
    per_slot = prof.context_verify_s.get(n, 0.0) + prof.context_draft_s.get(n, 0.0)
    return dataclasses.replace(
        prof,
        seconds=prof.seconds + per_slot * n * context,
        context_ref=None,
        note=prof.note + f"; R={n} steps at longest context {context:g} (what the engine's policy plans on)",
    )


def profile_now(ctx) -> Profile:
    """Verify latency vs B and draft seconds at R = n, profiled now in the workload's regime: its prompt and
    output lengths (so contexts span the same range) and the MEAN of the clean steps (the expected cost,
    with the drafter's once-per-request context intake included as often as in the workload), every step
    moved to no context: the engine pads every row's KV to the step's longest context, which the twin
    charges per step from its own requests (server.padded_context_seconds; the profile's lockstep requests
    run at shorter longest contexts than a closed loop's staggered ones)."""
    from engine.measure.profile import ProfileConfig, profile

    a = ctx.args
    pcfg = ProfileConfig(
        requests=(ctx.n,),
        gamma=a.gamma,
        drafter=a.drafter,
        prompt_len=a.prompt_len,
        new_tokens=a.output_len,
        device=a.device,
        clock=ctx.clock,
        statistic="mean",
        extra_requests=max(ctx.n // 2, 2),
        context=0.0,
    )
    return profile(ctx.bundle, ctx.corpus, pcfg, warm=False, probe=ctx.probe, probe_every=a.probe_every)


def steady_longest(prompt_len: int, output_len: int, n: int) -> float:
    """The longest context of a step in the closed loop's steady state: n requests spread evenly over their
    lives, the longest n/(n + 1) of the way through its output (the mean of the largest of n uniform
    draws). The engine pads KV to it; the profile's lockstep rollouts run at a shorter one."""
    return prompt_len + output_len * n / (n + 1)


def write_draft_cost(by_r: dict[int, float], n: int, path: Path) -> Path:
    """Write the draft pass's measured cost as a `requests,seconds` CSV (sim.drafter's `drafter.cost`) for
    R = 1..n drafting requests: the line through the measured seconds at R = n (exact, so full drafting
    is priced as before) with the least-squares slope of all measured R (the drain tail's smaller batches;
    proportional to R when only R = n was measured). The engine's parallel drafter runs its trained block
    for every drafting request, so its pass scales with the requests that draft, not with Σ depth."""
    r = np.array(sorted(by_r), dtype=np.float64)
    v = np.array([by_r[int(x)] for x in r])
    slope = float(np.polyfit(r, v, 1)[0]) if r.size >= 2 else by_r[n] / n
    rs = np.arange(1, n + 1)
    secs = np.maximum(by_r[n] + max(slope, 0.0) * (rs - n), 1e-9)
    lines = ["# draft pass seconds by drafting requests (specbed fidelity, from the engine profile)"]
    lines += ["requests,seconds"] + [f"{int(x)},{y:.9g}" for x, y in zip(rs, secs)]
    safeio.write_text(path, "\n".join(lines) + "\n")
    return path


def speed_ratio(run_probe, before: Profile, after: Profile) -> float:
    """The speed probe's mean time during the engine run over its mean time during the profiles around it
    (1.0 without probe samples): > 1 when the machine ran the engine's kind of work slower during the run.
    Reported only: the rollouts' times are already probe-normalized (engine.measure.rollout)."""
    ref = 0.5 * (before.probe_s + after.probe_s)
    return float(np.mean(run_probe)) / ref if len(run_probe) and before.probe_s and after.probe_s else 1.0


def bracketed(ctx, before: Profile, after: Profile, cost_path: Path, draft_path: Path):
    """(table, draft_s, join_s, drift, terms: the step-cost terms by name, `specsched.stepcost.TERMS`):
    the mean of the profiles just before and after the engine run (which cancels slow drifts of a shared
    machine), written to cost_path (verify) and draft_path (draft seconds by drafting requests) for the
    simulator."""
    n, layers = ctx.n, ctx.bundle.config.n_layers
    drift = level_drift(before.seconds, before.draft_s[n], after.seconds, after.draft_s[n])
    draft_s = 0.5 * (before.draft_s[n] + after.draft_s[n])
    intake = tuple(0.5 * (getattr(before, k).get(n, 0.0) + getattr(after, k).get(n, 0.0)) for k in INTAKE)
    join_s = float(np.mean([p.join_s[n] for p in (before, after) if n in p.join_s] or [0.0]))
    avg = Profile(
        before.tokens,
        0.5 * (before.seconds + after.seconds),
        {n: draft_s},
        note=before.note + "; mean of the profiles just before and after the engine run",
        join_s={n: join_s},
        intake_s={n: intake[0]},
        intake_tokens={n: intake[1]},
        pad_s={n: 0.5 * (before.pad_s.get(n, 0.0) + after.pad_s.get(n, 0.0))},
        context_verify_s={n: 0.5 * (before.context_verify_s[n] + after.context_verify_s[n])},
        context_draft_s={n: 0.5 * (before.context_draft_s[n] + after.context_draft_s[n])},
        context_ref=before.context_ref,
    )
    avg.write(cost_path)
    both = {r: 0.5 * (b + after.draft_s[r]) for r, b in before.draft_s.items() if r in after.draft_s}
    write_draft_cost(both, n, draft_path)
    return avg.table(layers=layers), draft_s, join_s, drift, profile_terms(avg, n)
