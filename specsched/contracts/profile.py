"""The measured-profile CSV: the engine's step cost on one device, written and read in one place.

Role: `specbed engine profile` and `specbed fidelity` write it (`Profile.write`); `specbed fidelity --cost`
and any cost-table reader (`specsched.CostTable.from_csv`) read it. The file is a `tokens,seconds` cost table
preceded by `#` comment lines; two of them carry numbers by batch size R:

    # specbed engine profile: <free-text note: device, clock, torch, drafter, ...>
    # draft_seconds_by_R: 8=0.00123, 16=0.00201      <- the drafter's seconds per engine step
    # join_seconds_by_R: 8=0.000456                   <- extra seconds per request joining (optional)
    # draft_intake_seconds_by_R: 8=5e-06              <- draft seconds per draft verified the step before
    # draft_intake_tokens_by_R: 8=1.9                 <- such drafts per drafting request in draft_s
    # verify_pad_seconds_by_R: 8=5e-06                <- seconds per padded verify slot (optional)
    # context_verify_seconds_by_R: 8=5e-07            <- verify seconds per padded KV slot (optional)
    # context_draft_seconds_by_R: 8=4e-07             <- draft seconds per padded KV slot (optional)
    # longest_context: 0                              <- the longest context every step was moved to
    tokens,seconds
    8,0.00412
    ...

tokens: int64[n] strictly increasing verify tokens B per step; seconds: float64[n] verify latency at B.
The intake lines (optional): a draft pass after a step that verified more drafts costs more;
`draft_seconds_by_R` is the mean over steps whose drafting requests had verified
`draft_intake_tokens_by_R` drafts each in their previous step, and each such draft costs
`draft_intake_seconds_by_R` (sim: drafter.intake_seconds / intake_tokens). The context lines: a step
pads every row's KV to its longest context, and costs that many seconds per padded KV slot (requests ×
longest context; the draft pass: drafting requests × longest context). `longest_context` says which
longest context the table and the draft seconds were moved to (0: the intercept, to which a twin adds its
own steps' cost, sim server.padded_context_seconds); absent, the steps are as measured.

May import: numpy, the standard library, `specsched.io.errors`, `specsched.cost`, `specsched.measured`,
`specsched.io.safeio`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from specsched.cost import CostTable
from specsched.io import inputs, safeio
from specsched.io.errors import InputError
from specsched.measured import write_steps

NOTE_PREFIX = "# specbed engine profile: "
DRAFT_KEY = "draft_seconds_by_R"
JOIN_KEY = "join_seconds_by_R"
INTAKE_KEY = "draft_intake_seconds_by_R"
INTAKE_TOKENS_KEY = "draft_intake_tokens_by_R"
PAD_KEY = "verify_pad_seconds_by_R"
CONTEXT_VERIFY_KEY = "context_verify_seconds_by_R"
CONTEXT_DRAFT_KEY = "context_draft_seconds_by_R"
CONTEXT_REF_KEY = "longest_context"


@dataclass
class Profile:
    """tokens int64[n] (strictly increasing), seconds float64[n], draft_s {R: seconds}, samples per point,
    join_s {R: extra seconds per request joining} (measured with extra requests > 0), intake_s {R: draft
    seconds per extra token taken in} and intake_tokens {R: extra tokens per drafting request in draft_s}."""

    tokens: np.ndarray
    seconds: np.ndarray
    draft_s: dict[int, float]
    samples: list[int] = field(default_factory=list)
    note: str = ""
    join_s: dict[int, float] = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)  # specbed measured-step rows (specsched.measured)
    intake_s: dict[int, float] = field(default_factory=dict)
    intake_tokens: dict[int, float] = field(default_factory=dict)
    probe_s: float = 0.0  # mean speed-probe seconds while profiling (in memory only: not written)
    pad_s: dict[int, float] = field(default_factory=dict)  # seconds per padded verify slot, by R
    context_verify_s: dict[int, float] = field(default_factory=dict)  # verify s per padded KV slot, by R
    context_draft_s: dict[int, float] = field(default_factory=dict)  # draft s per padded KV slot, by R
    context_ref: float | None = None  # the longest context the steps were moved to (None: as measured)

    def write_steps(self, path: str | Path) -> None:
        """specbed's measured-step CSV of this profile (what `specbed cost fit` reads)."""
        write_steps(path, self.steps)

    def table(self, layers: int = 1, name: str = "engine") -> CostTable:
        """The verify-latency table (linear between measured B), for the policy and the simulator."""
        return CostTable.from_points(self.tokens, self.seconds, mode="linear", layers=layers, name=name)

    def to_csv(self) -> str:
        head = [NOTE_PREFIX + self.note, _by_r_line(DRAFT_KEY, self.draft_s)]
        for key, values in ((JOIN_KEY, self.join_s), (INTAKE_KEY, self.intake_s)):
            if values:
                head.append(_by_r_line(key, values))
        if self.intake_s:
            head.append(_by_r_line(INTAKE_TOKENS_KEY, self.intake_tokens))
        if self.pad_s:
            head.append(_by_r_line(PAD_KEY, self.pad_s))
        for key, values in (
            (CONTEXT_VERIFY_KEY, self.context_verify_s),
            (CONTEXT_DRAFT_KEY, self.context_draft_s),
        ):
            if values:
                head.append(_by_r_line(key, values))
        if self.context_ref is not None:
            head.append(f"# {CONTEXT_REF_KEY}: {self.context_ref:g}")
        head += ["tokens,seconds"]
        return "\n".join(head + [f"{int(t)},{s:.6g}" for t, s in zip(self.tokens, self.seconds)]) + "\n"

    def write(self, path: str | Path) -> None:
        safeio.write_text(path, self.to_csv())  # atomic: a full disk keeps the old profile


def _by_r_line(key: str, values: dict[int, float]) -> str:
    return f"# {key}: " + ", ".join(f"{r}={s:.6g}" for r, s in sorted(values.items()))


def _parse_by_r(text: str, file: str, line: int, key: str) -> dict[int, float]:
    """`R=seconds, ...` -> {R: seconds}; R a positive integer, seconds finite (a measured join excess may be
    slightly negative: noise around zero)."""
    out: dict[int, float] = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        r, sep, sec = item.partition("=")
        try:
            rr, ss = int(r), float(sec)
        except ValueError:
            rr, ss = 0, math.nan
        if not sep or rr < 1 or not math.isfinite(ss):
            raise InputError(
                f"expected R=seconds (R >= 1, seconds finite), got {item!r}", file=file, line=line, field=key
            )
        out[rr] = ss
    return out


def read_profile(path: str | Path) -> Profile:
    """Read a profile CSV (any cost table reads: the comment lines are optional, `draft_s` / `join_s` are then
    empty). Raises `InputError` naming the file, line and field for a malformed comment or table."""
    file = str(path)
    table = CostTable.from_csv(path, mode="linear")  # the table's own checks, one CSV reader
    keys = (DRAFT_KEY, JOIN_KEY, INTAKE_KEY, INTAKE_TOKENS_KEY, PAD_KEY)
    keys += (CONTEXT_VERIFY_KEY, CONTEXT_DRAFT_KEY)
    text = inputs.read_text(path, what="profile", limit=inputs.LIMITS["table"])
    with inputs.reading(file):
        return _parse_profile(table, text, file, keys)


def _parse_profile(table: CostTable, text: str, file: str, keys: tuple[str, ...]) -> Profile:
    note, by_r, ref = "", {k: {} for k in keys}, None
    for i, line in enumerate(text.splitlines(), start=1):
        if line.startswith(NOTE_PREFIX):
            note = line[len(NOTE_PREFIX) :]
        if line.startswith(f"# {CONTEXT_REF_KEY}:"):
            ref = _parse_context(line.split(":", 1)[1], file, i)
        for key in by_r:
            if line.startswith(f"# {key}:"):
                by_r[key] = _parse_by_r(line.split(":", 1)[1], file, i, key)
    for key in (INTAKE_KEY, INTAKE_TOKENS_KEY, PAD_KEY, CONTEXT_VERIFY_KEY, CONTEXT_DRAFT_KEY):
        bad = [v for v in by_r[key].values() if v < 0]
        if bad:
            raise InputError(f"must be >= 0, got {bad[0]!r}", file=file, field=key)
    return Profile(
        table.tokens,
        table.seconds,
        by_r[DRAFT_KEY],
        note=note,
        join_s=by_r[JOIN_KEY],
        intake_s=by_r[INTAKE_KEY],
        intake_tokens=by_r[INTAKE_TOKENS_KEY],
        pad_s=by_r[PAD_KEY],
        context_verify_s=by_r[CONTEXT_VERIFY_KEY],
        context_draft_s=by_r[CONTEXT_DRAFT_KEY],
        context_ref=ref,
    )


def _parse_context(text: str, file: str, line: int) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        got = text.strip()
        raise InputError(f"expected tokens >= 0, got {got!r}", file=file, line=line, field=CONTEXT_REF_KEY)
    return value
