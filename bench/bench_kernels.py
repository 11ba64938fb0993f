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
import csv
import json
import time
from pathlib import Path

import numpy as np

import specsched
from specsched.io import safeio
from specsched.kernels import allreduce_seconds, build, figures, prefill_parts

OUT = Path(specsched.__file__).parent / "data" / "kernel_figures.json"


def _fmt(fig: dict) -> str:
    parts = []
    for k, v in fig.items():
        if k == "L":
            parts.append(f"L {v * 1e6:6.2f} µs")
        elif k == "q":
            parts.append(f"q {v * 1e12:6.2f} ps/elem")
        elif k == "s":
            parts.append(f"s {v * 1e9:6.2f} ns/row")
        elif k == "h":
            parts.append(f"h {v * 1e6:6.2f} µs")
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


def _splitwise() -> dict:
    """{(prompt, tp): median prefill seconds} of the Splitwise Llama-2-70B / H100 rows at batch 1."""
    rows: dict = {}
    with open(Path(specsched.__file__).parent / "data" / "llama2-70b_h100.csv") as fh:
        for r in csv.DictReader(fh):
            if r["batch_size"] == "1":
                rows.setdefault((int(r["prompt_size"]), int(r["tensor_parallel"])), []).append(
                    float(r["prompt_time"]) / 1e3
                )
    return {k: float(np.median(v)) for k, v in rows.items()}


def prefill_evidence() -> None:
    """Issue 33 item 5: how a prefill's per-token time splits over the kernels, per TP, against the step
    price's token-dependent part (the shipped "row" form), what the previous "layer" form's c_token term
    (layers · c_token · tokens, at any TP) would add, and the Splitwise measurements."""
    from specsched.price.knobs import shipped_knobs
    from specsched.price.vllm import VllmSpec, step_parts

    knobs = shipped_knobs("h100")
    meas = _splitwise()
    print("\nprefill of one prompt, Llama-2-70B on H100, ms: kernels (GEMM + attention + all-reduce = sum),")
    print("a 'layer'-form c_token term (layers·c_token·tokens), the price's token-dependent part; Splitwise")
    for prompt in (512, 2048, 8192):
        for tp in (1, 2, 4, 8):
            p = prefill_parts("llama2-70b", "h100", prompt, tp=tp)
            parts = step_parts(VllmSpec("llama2-70b", "h100", tp=tp), knobs, np.array([float(prompt)]))
            price = float(parts["weights_or_compute"][0] + parts["comm"][0])
            c_tok = 80 * knobs.c_token * prompt  # what the TP-blind "layer" form would charge
            got = meas.get((prompt, tp))
            print(
                f"  {prompt:5} TP{tp}: {p['gemm'] * 1e3:7.1f} + {p['attention'] * 1e3:6.1f} + "
                f"{p['allreduce'] * 1e3:6.1f} = {sum(p.values()) * 1e3:7.1f}   c_token {c_tok * 1e3:6.1f}  "
                f"price {price * 1e3:7.1f}   Splitwise {'-' if got is None else f'{got * 1e3:7.1f}'}"
            )
    cells = []
    for tp in (2, 4, 8):
        t = allreduce_seconds("llama2-70b", "h100", np.array([4096.0, 8192.0]), tp=tp)
        cells.append(f"TP{tp} {(t[1] - t[0]) / 4096 / 80 * 1e6:5.3f}")
    print(
        "all-reduce bytes per token per layer (measured form, Llama-2-70B, H100), µs: "
        + ", ".join(cells)
        + f"; TP1 0; a 'layer'-form c_token {knobs.c_token * 1e6:5.3f} at every TP"
    )
    print(
        "FP8 weights (measured FP8 GEMM form), Llama-3.1-70B, 8192 tokens, ms (GEMM + attention + all-reduce)"
    )
    for gpu in ("h100", "h200", "b200"):
        cells = []
        for tp in (1, 2, 4, 8):
            p = prefill_parts("llama3.1-70b", gpu, 8192, tp=tp, fp8=True)
            cells.append(
                f"TP{tp} {p['gemm'] * 1e3:5.0f}+{p['attention'] * 1e3:4.0f}+{p['allreduce'] * 1e3:4.0f}"
            )
        print(f"  {gpu:5} " + "  ".join(cells))


def report_kv_fp8(res: dict) -> None:
    print(
        "\nFP8 KV cache, decode attention: MAPE % carried from BF16 figures (1 byte a KV element) | fitted;"
    )
    print("median FP8/BF16 time of the same shapes (the price's KV factor, kv_bytes_factor)")
    for gpu, d in res["gpus"].items():
        f = d.get("kv_fp8")
        if not f:
            print(f"  {gpu:5} no FP8-cache rows")
            continue
        print(
            f"  {gpu:5} n={f['rows']:<5} carried {f['carried_mape']:5.1f} | fit {f['fit_mape']:5.1f}  "
            f"FP8/BF16 time {f['time_ratio']:5.3f}  {_fmt(f['fit'])}"
        )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=build.DEFAULT_ROOT)
    p.add_argument("--write", action="store_true", help=f"write {OUT.name}")
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    res = build.build(args.root)
    report(res)
    report_kv_fp8(res)
    print(f"\nfitted in {time.perf_counter() - t0:.1f} s")
    if args.write:
        doc = figures.document(res)
        safeio.write_text(OUT, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        print(f"wrote {OUT}")
    prefill_evidence()  # from the shipped figures


if __name__ == "__main__":
    main()
