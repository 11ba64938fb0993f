"""vLLM's (and SGLang's) speculative-decoding acceptance, read from whatever its users paste.

Role: turn a serving engine's own numbers into per-position counts `Acceptance` (and from there the
conditional curve a curves file holds). `read_acceptance` recognises each input by content and hands it to
its reader (formats, versions and what is exact: docs/vllm-formats.md):

- Prometheus `/metrics` text or a table pasted from the Prometheus UI / Grafana (`bridge.read_prom`);
- vLLM v1 `SpecDecoding metrics:` log lines (`bridge.read_logs`);
- `vllm bench serve --save-result` JSON and per-request `metrics.speculative_decoding` JSON with an
  `acceptance_histogram` (`bridge.read_json`);
- the `vllm bench serve` console report and `examples/offline_inference/spec_decode.py`'s printout
  (`bridge.read_reports`);
- τ-only sources, vLLM v0 `Speculative metrics:` lines and SGLang `accept len` lines
  (`bridge.read_legacy`): refused unless `tau_only`, then a constant-acceptance curve fitted to τ.

vLLM's position i counts drafts with at least i + 1 tokens accepted, so its per-position rates a_i / D
are unconditional and non-increasing, τ = 1 + Σ_i a_i / D, and the conditional curve is
c_1 = a_0 / D, c_i = a_{i−1} / a_{i−2}. Zero drafts, a rate above the previous position's, or a missing
position raise `InputError` naming the file (line) and field; every reader adds its own consistency
checks (no silent partial read).

May import: numpy, the standard library, `specsched` (errors, inputs), `bridge.counts`, the `bridge`
readers (lazily).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bridge.counts import Acceptance, TauOnly
from specsched.io import inputs
from specsched.io.errors import InputError


def tau_curve(tau: float, k: int) -> np.ndarray:
    """float64[k]: unconditional rates α, α², ..., α^k of the constant conditional acceptance α with
    1 + Σ α^i = τ (bisection; τ in [1, k + 1])."""
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = (lo + hi) / 2
        if 1.0 + sum(mid**i for i in range(1, k + 1)) < tau:
            lo = mid
        else:
            hi = mid
    alpha = (lo + hi) / 2
    return np.array([alpha**i for i in range(1, k + 1)], dtype=np.float64)


def from_tau(t: TauOnly, tau_only: bool, k_flag: int | None) -> Acceptance:
    """The curve fitted to a τ-only source, or (without `tau_only`) the one-line refusal saying so."""
    k = k_flag if k_flag is not None else t.k
    if not tau_only:
        raise InputError(
            f"{t.kind} carries τ = {t.tau:.3f} only, no per-position counts: pass --tau-only to store a "
            "constant-acceptance curve fitted to τ (marked as fitted in the curves file)",
            file=t.file, line=t.line, field="FILE",
        )  # fmt: skip
    if k is None:
        raise InputError(f"{t.kind} gives no draft length K: pass --k", file=t.file, line=t.line, field="--k")
    if t.k is not None and k_flag is not None and k_flag != t.k:
        raise InputError(f"--k {k_flag} disagrees with the source's K = {t.k}", file=t.file, line=t.line,
                         field="--k")  # fmt: skip
    if not 1.0 <= t.tau <= k + 1 + 1e-9:
        raise InputError(f"τ = {t.tau:.3f} is outside [1, K + 1 = {k + 1}]: K disagrees with τ", file=t.file,
                         line=t.line, field="--k" if k_flag is not None else "FILE")  # fmt: skip
    drafts = t.drafts if t.drafts else 1.0
    per_pos = tau_curve(t.tau, k) * drafts
    notes = (*t.notes, f"τ only: per-position rates FITTED (constant acceptance, K = {k}), not measured")
    return Acceptance(drafts, per_pos, t.sources or (t.file,), t.kind, notes, measured=False)


# -- any of them -----------------------------------------------------------------------------------------


def _kind(text: str, file: str) -> str:
    from bridge import read_json, read_legacy, read_logs, read_prom, read_reports

    for name, test in (
        ("json", read_json.is_json),
        ("log", read_logs.is_log),
        ("v0 log", read_legacy.is_v0),
        ("bench console", read_reports.is_console),
        ("offline printout", read_reports.is_offline),
        ("sglang log", read_legacy.is_sglang),
        ("prometheus", read_prom.is_prometheus),
    ):
        if test(text):
            return name
    raise InputError(
        "neither vLLM /metrics text (or a pasted table of it), a log with 'SpecDecoding metrics:' or "
        "'Speculative metrics:' lines, a vllm bench serve report or JSON, a per-request JSON, the "
        "spec_decode.py printout nor an SGLang decode log",
        file=file,
        field="FILE",
    )


def read_acceptance(
    paths: list[str | Path], *, tau_only: bool = False, k: int | None = None
) -> Acceptance:
    """Read one kind of input from `paths` (see the module docstring) into pooled counts."""
    from bridge.textutil import read_texts

    if not paths:
        raise InputError("no input files", field="FILE")
    files = [str(p) for p in paths]
    texts = read_texts(files)
    with inputs.reading(files[0] if len(files) == 1 else ", ".join(files)):
        return _read_kind(files, texts, tau_only, k)


def _read_kind(files: list[str], texts: list[str], tau_only: bool, k: int | None) -> Acceptance:
    from bridge import read_json, read_legacy, read_logs, read_prom, read_reports

    kinds = [_kind(t, f) for t, f in zip(texts, files)]
    if len(set(kinds)) > 1:
        raise InputError(
            f"is a {kinds[-1]} file but {files[0]} is a {kinds[0]} file: give files of one kind",
            file=files[-1],
            field="FILE",
        )
    reader = {
        "prometheus": read_prom.read_prometheus,
        "log": read_logs.read_logs,
        "json": read_json.read_json,
        "bench console": read_reports.read_console,
        "offline printout": read_reports.read_offline,
        "v0 log": read_legacy.read_v0,
        "sglang log": read_legacy.read_sglang,
    }[kinds[0]]
    got = reader(files, texts)
    if isinstance(got, TauOnly):
        return from_tau(got, tau_only, k)
    if k is not None and k != got.per_pos.size:
        raise InputError(f"--k {k} disagrees with the {got.per_pos.size} positions measured", field="--k")
    return got
