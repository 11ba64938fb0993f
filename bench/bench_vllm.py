"""The vLLM bridge: `--timeline` overhead on the Azure conversation replay, and τ from vLLM's counters.

1. Timeline overhead (goal: ≤ 25 % more run time): the whole Azure 2023 conversation replay
   (configs/azure-conv-replay.toml), without and with the streaming timeline writer, alternated
   (plain, timeline, ...; `SPECBED_BENCH_REPS`, default 3) so the shared machine's load hits both alike;
   prints each run's wall and CPU time and the with/without ratios (medians and minima).
   `SPECBED_BENCH_AZURE_N=5000` replays only the first N requests.
2. τ from vLLM inputs (goal: ±0.05): one ground-truth acceptance written as a Prometheus before/after
   pair (two engines), a log (old and new field orders, CRLF, rates rounded as vLLM prints them) and a
   `vllm bench serve` JSON; each goes through `specbed curves from-vllm`, then a simulated run verifying
   every draft (policy fixed, k = K) must reproduce τ = 1 + Σ per-position rates.

May import: numpy, the standard library, sim, specsched.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from sim.config_io import load_config
from sim.run import simulate
from sim.timeline import TimelineWriter

AZURE = Path(__file__).resolve().parent.parent / "configs" / "azure-conv-replay.toml"
#: ground truth for part 2: a 5-position n-gram-like drafter, conditional acceptance per position
TRUE_CURVE = (0.62, 0.71, 0.74, 0.76, 0.78)
TRUE_DRAFTS = 240_000


def _azure_run(n: int, timeline_dir: str | None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of this process, engine steps) of one replay, timeline written or not."""
    sets = [f"workload.num_requests={n}"] if n else []
    cfg = load_config(str(AZURE), sets)
    writer = None
    wall0, cpu0 = time.perf_counter(), time.process_time()
    if timeline_dir is not None:
        writer = TimelineWriter(Path(timeline_dir) / "timeline.json", gamma=cfg.drafter.effective_gamma)
    res = simulate(cfg, observer=writer)
    if writer is not None:
        writer.close()
    return time.perf_counter() - wall0, time.process_time() - cpu0, res.summary["steps"]


def bench_timeline() -> None:
    n = int(os.environ.get("SPECBED_BENCH_AZURE_N", "0"))
    reps = int(os.environ.get("SPECBED_BENCH_REPS", "3"))
    what = f"first {n} requests" if n else "whole trace"
    print(f"--timeline overhead, Azure 2023 conversation replay ({what}; goal ≤ 25 %)")
    runs: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            for with_tl in (False, True):
                wall, cpu, steps = _azure_run(n, tmp if with_tl else None)
                runs[with_tl].append((wall, cpu))
                label = "timeline" if with_tl else "plain   "
                print(f"  rep {rep} {label} {wall:8.2f} s wall {cpu:8.2f} s CPU, {steps} steps", flush=True)
        size = (Path(tmp) / "timeline.json").stat().st_size
    for i, clock in enumerate(("wall", "CPU")):
        for name, pick in (("median", statistics.median), ("min", min)):
            ratio = pick(r[i] for r in runs[True]) / pick(r[i] for r in runs[False])
            print(f"  {clock:>4} time with / without ({name}): {ratio:.3f} ({100 * (ratio - 1):+.1f} %)")
    print(
        f"  timeline.json {size / 1e6:.1f} MB. The machine is shared: CPU time (this process only) is the "
        "steadier figure"
    )


def _truth() -> tuple[np.ndarray, float]:
    """Per-position counts a_i (drafts with ≥ i + 1 accepted) of TRUE_CURVE over TRUE_DRAFTS drafts."""
    per_pos = np.round(TRUE_DRAFTS * np.cumprod(TRUE_CURVE))
    return per_pos, 1.0 + per_pos.sum() / TRUE_DRAFTS


def _prometheus_pair(tmp: Path, per_pos: np.ndarray) -> list[str]:
    """Two scrapes of two engines; the second adds the truth (split 60/40) to the first."""

    def scrape(name: str, drafts: list[float], counts: list[np.ndarray]) -> str:
        lines = ["# TYPE vllm:spec_decode_num_drafts_total counter"]
        for e, (d, c) in enumerate(zip(drafts, counts)):
            labels = f'engine="{e}",model_name="m"'
            lines.append(f"vllm:spec_decode_num_drafts_total{{{labels}}} {d}")
            lines.append(f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {d * len(c)}")
            lines += [
                f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} {a}'
                for i, a in enumerate(c)
            ]
        path = tmp / name
        path.write_text("\n".join(lines) + "\n")
        return str(path)

    base = [np.round(per_pos * 0.01), np.round(per_pos * 0.02)]
    d0 = [TRUE_DRAFTS * 0.01, TRUE_DRAFTS * 0.02]
    after = [base[0] + np.round(per_pos * 0.6), base[1] + per_pos - np.round(per_pos * 0.6)]
    d1 = [d0[0] + TRUE_DRAFTS * 0.6, d0[1] + TRUE_DRAFTS * 0.4]
    return [scrape("before.prom", d0, base), scrape("after.prom", d1, after)]


def _log(tmp: Path, per_pos: np.ndarray) -> list[str]:
    """12 ten-second intervals of varying drafts, old and new field orders alternating, CRLF, 3 decimals."""
    k, lines = per_pos.size, []
    shares = np.arange(1, 13) / np.arange(1, 13).sum()
    for j, share in enumerate(shares):
        d = TRUE_DRAFTS * share
        rates = ", ".join(f"{r:.3f}" for r in per_pos / TRUE_DRAFTS)
        acc = int(round(per_pos.sum() * share))
        if j % 2:
            lines.append(
                f"INFO [metrics.py:86] SpecDecoding metrics: Draft acceptance rate: 40.0%, Mean acceptance "
                f"length: 2.80, Accepted: {acc} tokens, Drafted: {int(round(d * k))} tokens, "
                f"Per-position acceptance rate: {rates}"
            )
        else:
            lines.append(
                f"INFO [metrics.py:98] SpecDecoding metrics: Mean acceptance length: 2.80, Accepted "
                f"throughput: 1.0 tokens/s, Drafted throughput: 2.0 tokens/s, Accepted: {acc} tokens, "
                f"Drafted: {int(round(d * k))} tokens, Per-position acceptance rate: {rates}, "
                "Avg Draft acceptance rate: 40.0%"
            )
    path = tmp / "vllm.log"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    return [str(path)]


def _bench_json(tmp: Path, per_pos: np.ndarray) -> list[str]:
    path = tmp / "bench.json"
    doc = {
        "completed": 1000,
        "spec_decode_num_drafts": TRUE_DRAFTS,
        "spec_decode_per_position_acceptance_rates": (per_pos / TRUE_DRAFTS).tolist(),
    }
    path.write_text(json.dumps(doc))
    return [str(path)]


def bench_tau() -> None:
    """Each vLLM input → `specbed curves from-vllm` → a run verifying every draft: τ against the truth."""
    from specbed.cli import main as specbed

    per_pos, tau = _truth()
    k = per_pos.size
    n = int(os.environ.get("SPECBED_BENCH_TAU_N", "4000"))
    print(
        f"τ from vLLM inputs (goal ±0.05): truth τ = 1 + Σ rates = {tau:.4f}, K = {k}, {n} requests per run"
    )
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        for label, make in (
            ("prometheus pair", _prometheus_pair),
            ("log", _log),
            ("bench json", _bench_json),
        ):
            curves = tmp / f"{label.replace(' ', '_')}.json"
            files = make(tmp, per_pos)
            with contextlib.redirect_stdout(io.StringIO()):
                code = specbed(["curves", "from-vllm", *files, "--drafter", "ngram", "--domain", "chat",
                                "--out", str(curves)])  # fmt: skip
            if code != 0:
                print(f"  {label}: from-vllm failed (exit {code})")
                continue
            sets = [
                "drafter.name=ngram", "drafter.kind=free", f"drafter.gamma={k}", f"drafter.curves={curves}",
                "policy.name=fixed", f"policy.k={k}", "workload.domain=chat", f"workload.num_requests={n}",
                "workload.rate=20",
            ]  # fmt: skip
            s = simulate(load_config(None, sets)).summary
            err = s["spec_acceptance_length"] - tau
            print(
                f"  {label:<16} τ sim {s['spec_acceptance_length']:.4f} (window tau_mean "
                f"{s['tau_mean']:.4f}) error {err:+.4f} {'ok' if abs(err) <= 0.05 else 'MISSED'}",
                flush=True,
            )


def main() -> None:
    bench_tau()
    bench_timeline()


if __name__ == "__main__":
    main()
