"""Issue 33 item 5: an 8,192-token prefill of Llama-3.1-70B on H100 at TP 1/2/4/8, BF16 and FP8, priced
by the step price with the per-token term in its two forms, beside what compute alone implies.

    python -m bench.bench_prefill_token [--layer-knobs KNOBS.json] [--shard-knobs KNOBS.json]

Per TP and precision, milliseconds of one prefill step of 8,192 tokens (no KV held before it), by
`specsched.price.vllm.step_parts`:
- `layer`: `token_units` "layer" (shipped: layers · c_token · B, TP-blind) with --layer-knobs (default:
  the shipped H100 knobs);
- `shard`: `token_units` "shard" (B · active params / tp / 2·10⁸, /2 with FP8 weights) with
  --shard-knobs (a `specbed vllm calibrate` file fitted with TOKEN_FORM = "shard"; default: the
  shipped knobs);
- `compute`: 2 · active params · B / tp over eta_f · peak (the FP8 rate 2× on Hopper): the roofline's
  compute side alone; and `kernels`: the measured-kernel form's GEMM + attention + all-reduce
  (`specsched.kernels.prefill_parts`), for reference.
The step price has no prefill-attention FLOP term (item 5's context-attention part is not in it).
"""

from __future__ import annotations

import argparse

import numpy as np

from specsched.kernels import prefill_parts
from specsched.price.knobs import Knobs, shipped_knobs
from specsched.price.vllm import VllmSpec, step_parts
from validate.cli import load_knobs_file

MODEL, GPU, TOKENS = "llama3.1-70b", "h100", 8192


def _knobs(path: str | None) -> Knobs:
    return shipped_knobs(GPU) if path is None else load_knobs_file(path)[1]


def compute(spec: VllmSpec, knobs: Knobs) -> float:
    m, g, bpp = spec.resolve()
    peak = g.flops * (2.0 if bpp <= 1.0 else 1.0)
    return 2.0 * m.active_params * TOKENS / spec.tp / (knobs.eta_f * peak)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layer-knobs", help="knobs for the shipped form (default: the shipped H100 knobs)")
    p.add_argument("--shard-knobs", help="knobs fitted in the shard form (default: the shipped H100 knobs)")
    args = p.parse_args(argv)
    knobs = {"layer": _knobs(args.layer_knobs), "shard": _knobs(args.shard_knobs)}
    print(f"{MODEL} on {GPU}, one prefill step of {TOKENS} tokens, ms")
    print("c_token: " + ", ".join(f"{f} {k.c_token * 1e6:.3f} µs" for f, k in knobs.items()))
    print(f"{'precision':<9} {'tp':>3} {'layer':>9} {'shard':>9} {'compute':>9} {'kernels':>9}")
    b = np.array([float(TOKENS)])
    for precision in ("bf16", "fp8"):
        for tp in (1, 2, 4, 8):
            spec = VllmSpec(model=MODEL, gpu=GPU, tp=tp, precision=precision)
            t = {f: float(sum(step_parts(spec, k, b, token_form=f).values())[0]) for f, k in knobs.items()}
            kern = sum(prefill_parts(MODEL, GPU, TOKENS, tp=tp, fp8=precision == "fp8").values())
            print(
                f"{precision:<9} {tp:>3} {t['layer'] * 1e3:9.1f} {t['shard'] * 1e3:9.1f} "
                f"{compute(spec, knobs['layer']) * 1e3:9.1f} {kern * 1e3:9.1f}"
            )


if __name__ == "__main__":
    main()
