"""Per-GPU kernel figures from vLLM's measured kernels: in-sample and leave-one-GPU-out errors, FP8 GEMMs.

    python bench/bench_kernels.py [--root ../shared/measured/aiconfigurator] [--write]

Fits each kernel kind's form (`specsched.kernels.forms`) per GPU on the AIConfigurator tables (Apache-2.0,
needs pyarrow), prints per GPU and kind the figures, the in-sample MAPE and the leave-one-GPU-out MAPE (the
held-out GPU predicted from its datasheet and the other four GPUs' figures), the GEMM MAPE by regime
(decode-shaped, large), and FP8 GEMMs carried from BF16 and fitted. `--write` regenerates
`specsched/data/kernel_figures.json`, the figures the GPU rule and FP8 pricing ship with.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import specsched
from specsched import safeio
from specsched.kernels import build, figures

OUT = Path(specsched.__file__).parent / "data" / "kernel_figures.json"


def _fmt(fig: dict) -> str:
    parts = []
    for k, v in fig.items():
        if k == "L":
            parts.append(f"L {v * 1e6:6.2f} µs")
        elif k == "q":
            parts.append(f"q {v * 1e12:6.2f} ps/elem")
        elif k == "w":
            parts.append(f"w {v:6.3f}")
        else:
            parts.append(f"{k} {v:5.3f}")
    return ", ".join(parts)


def report(res: dict) -> None:
    print("kernel forms per GPU: figures; MAPE % in sample | leave-one-GPU-out (datasheet + other GPUs)")
    for kind, per in res["errors"].items():
        print(f"\n{kind}")
        for gpu, e in per.items():
            fig = (
                res["gpus"][gpu][kind] if kind in res["gpus"][gpu] else res["gpus"][gpu]["fp8"]["fp8"]["fit"]
            )
            print(f"  {gpu:5} {_fmt(fig):58} in {e['in_mape']:5.1f} | LOGO {e['logo_mape']:5.1f}")
    print("\nGEMM (bf16) in-sample MAPE % by regime; fixed-time figures")
    for gpu, reg in res["regimes"].items():
        d = res["gpus"][gpu]
        print(
            f"  {gpu:5} decode-shaped {reg['decode']:5.1f}  large {reg['large']:5.1f}   "
            f"floor {d['floor'] * 1e6:5.2f} µs  all-reduce ≤64 kB {d['ar_small'] * 1e6:5.2f} µs"
        )
    print("\nFP8 GEMMs: MAPE % carried from BF16 figures (FP8 rate and bytes, no scaling term) | fitted")
    for gpu, d in res["gpus"].items():
        for dtype, f in d["fp8"].items():
            print(
                f"  {gpu:5} {dtype:9} n={f['rows']:<6} carried {f['carried_mape']:5.1f} | fit "
                f"{f['fit_mape']:5.1f} (decode {f['decode_mape']:5.1f}, large {f['large_mape']:5.1f})  "
                f"{_fmt(f['fit'])}"
            )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=build.DEFAULT_ROOT)
    p.add_argument("--write", action="store_true", help=f"write {OUT.name}")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    res = build.build(args.root)
    report(res)
    print(f"\nfitted in {time.perf_counter() - t0:.1f} s")
    if args.write:
        doc = figures.document(res)
        safeio.write_text(OUT, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
