"""Seconds of `specbed cost fit` on the shipped Llama-2-70B / H100 measurements (630 points from 315 rows).

Goal (issue 12): `specbed cost fit` on a few hundred rows in ≤ 5 s. Printed side by side with a reference
measured in the same run — the same process doing only what every `specbed` command does (interpreter
start, imports, reading the file: `specbed cost check` on a 1-row selection) — so the fit's own share is
readable on a loaded machine. Fresh inputs: each repeat fits a copy of the file with its times jittered by
±2 % (seeded), so no run sees the previous one's data. Also the in-process fit alone, and the in-sample
MAPE per TP and phase of that fit.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import specsched
from specsched.fit import fit, predict, summary
from specsched.measured import read_measured

DATA = Path(specsched.__file__).parent / "data" / "llama2-70b_h100.csv"
REPEATS = 3


def _jittered(rng: np.random.Generator, out: Path) -> None:
    lines = DATA.read_text().splitlines()
    head, rows = lines[0], [ln.split(",") for ln in lines[1:]]
    cols = head.split(",")
    for row in rows:
        for c in ("prompt_time", "token_time"):
            i = cols.index(c)
            row[i] = repr(float(row[i]) * float(rng.uniform(0.98, 1.02)))
    out.write_text("\n".join([head] + [",".join(r) for r in rows]) + "\n")


def _wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    rng = np.random.default_rng(np.random.SeedSequence(12))
    exe = [sys.executable, "-m", "specbed"]
    fits, refs, inproc = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(REPEATS):
            data = Path(tmp) / f"m{i}.csv"
            _jittered(rng, data)
            fit_json = Path(tmp) / f"fit{i}.json"
            fits.append(
                _wall(
                    [
                        *exe,
                        "cost",
                        "fit",
                        str(data),
                        "--model",
                        "llama2-70b",
                        "--gpu",
                        "h100",
                        "--out",
                        str(fit_json),
                    ]
                )
            )
            refs.append(
                _wall(
                    [
                        *exe,
                        "cost",
                        "check",
                        str(data),
                        "--fit",
                        str(fit_json),
                        "--where",
                        "tensor_parallel=2",
                        "--where",
                        "batch_size=64",
                        "--where",
                        "phase=decode",
                    ]
                )
            )
            points = read_measured([data])
            start = time.perf_counter()
            knobs, outlier = fit(points, "llama2-70b", "h100")
            inproc.append(time.perf_counter() - start)
    print(
        f"{len(points)} points ({len(points) // 2} rows), {REPEATS} fresh jittered copies; "
        "seconds (min / median)"
    )
    print(f"  specbed cost fit (whole command)        {min(fits):6.2f} / {np.median(fits):6.2f}")
    print(f"  reference: specbed cost check, 5 points {min(refs):6.2f} / {np.median(refs):6.2f}")
    print(f"  fit's own share (fit − reference)       {np.median(fits) - np.median(refs):6.2f}")
    print(f"  in-process fit() alone                  {min(inproc):6.3f} / {np.median(inproc):6.3f}")
    print(f"  goal: whole command ≤ 5 s -> {'met' if np.median(fits) <= 5 else 'MISSED'}")
    summ = summary(points, predict(points, "llama2-70b", "h100", knobs), ~outlier)
    print(f"last fit: {int(outlier.sum())} outliers flagged; MAPE % (goal decode ≤ 10 per TP, prefill ≤ 15):")
    for tp, per in summ["by_tp"].items():
        print(f"  TP{tp}: decode {per['decode']['mape_pct']:.2f}, prefill {per['prefill']['mape_pct']:.2f}")
    print(f"  all: decode {summ['decode']['mape_pct']:.2f}, prefill {summ['prefill']['mape_pct']:.2f}")


if __name__ == "__main__":
    main()
