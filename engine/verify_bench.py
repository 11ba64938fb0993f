"""Time the Triton verifier against the torch reference (called by bench/gpu_verify.sh).

Role: `python -m engine.verify_bench --device cuda` prints, for R in {1, 64, 256} requests, γ = 7 and
V in {32000, 150000}, the median milliseconds of `rejection_sample` per backend (noise injected and rows
unchecked, so only verification is timed; one row also times the checked call), and whether both backends
returned identical tokens. `--tiny` shrinks every size so the same code runs on the CPU (Triton interpreter)
in seconds. Progress goes to stderr.

May import: torch, stdlib, engine.verify, engine.proof.suite_engine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch

FULL = {"requests": (1, 64, 256), "vocabs": (32_000, 150_000), "gamma": 7}
TINY = {"requests": (1, 4), "vocabs": (50, 300), "gamma": 7}


def _inputs(r: int, gamma: int, vocab: int, device: str, seed: int) -> dict[str, torch.Tensor]:
    """Float32 rows (softmax of N(0, 2^2) logits), drafts sampled from q by an exponential race, ragged
    lengths in [0, γ], injected float64 noise -- all built on `device` (no host copies at 150k vocab)."""
    gen = torch.Generator(device=device).manual_seed(seed)
    q = torch.softmax(torch.randn(r, gamma, vocab, generator=gen, device=device) * 2, -1)
    p = torch.softmax(torch.randn(r, gamma + 1, vocab, generator=gen, device=device) * 2, -1)
    e_draft = torch.empty(r, gamma, vocab, dtype=torch.float64, device=device).exponential_(generator=gen)
    drafts = (q.double() / e_draft).argmax(-1)
    del e_draft
    lengths = torch.randint(0, gamma + 1, (r,), generator=gen, device=device)
    u = torch.rand(r, gamma, dtype=torch.float64, generator=gen, device=device)
    e = torch.empty(r, vocab, dtype=torch.float64, device=device).exponential_(generator=gen)
    return {
        "draft_tokens": drafts,
        "draft_probs": q,
        "target_probs": p,
        "lengths": lengths,
        "uniforms": u,
        "exponentials": e,
    }


def _time_ms(fn, device: str, repeats: int) -> float:
    fn()  # warm-up (and Triton compile)
    times = []
    for _ in range(repeats):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def run(device: str, sizes: dict, repeats: int) -> list[dict]:
    from engine.verify import rejection_sample

    rows = []
    configs = [(r, v) for v in sizes["vocabs"] for r in sizes["requests"]]
    started = time.perf_counter()
    for i, (r, vocab) in enumerate(configs):
        x = _inputs(r, sizes["gamma"], vocab, device, seed=i)
        ref = rejection_sample(**x, backend="torch", check=False)
        tri = rejection_sample(**x, backend="triton", check=False)
        same = bool(torch.equal(ref[0], tri[0]) and torch.equal(ref[1], tri[1]))
        row = {"R": r, "V": vocab, "gamma": sizes["gamma"], "identical": same}
        for backend in ("torch", "triton"):
            row[backend] = _time_ms(
                lambda b=backend, x=x: rejection_sample(**x, backend=b, check=False), device, repeats
            )
        row["checked"] = _time_ms(
            lambda x=x: rejection_sample(**x, backend="triton"), device, max(1, repeats // 4)
        )
        rows.append(row)
        del x, ref, tri
        if device == "cuda":
            torch.cuda.empty_cache()
        done = time.perf_counter() - started
        eta = done / (i + 1) * (len(configs) - i - 1)
        print(f"[verify_bench] {i + 1}/{len(configs)} R={r} V={vocab} done, ETA {eta:.0f} s", file=sys.stderr)
    return rows


def format_rows(rows: list[dict], device: str) -> str:
    head = (
        f"{'R':>5} {'V':>7} {'γ':>2}  {'torch ms':>9} {'triton ms':>9} {'speedup':>7}  "
        f"{'triton+checks ms':>16}  identical"
    )
    lines = [f"rejection_sample on {device}: median of repeats, noise injected, rows unchecked", head]
    for r in rows:
        lines.append(
            f"{r['R']:>5} {r['V']:>7} {r['gamma']:>2}  {r['torch']:>9.3f} {r['triton']:>9.3f} "
            f"{r['torch'] / r['triton']:>6.2f}x  {r['checked']:>16.3f}  {r['identical']}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engine.verify_bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--tiny", action="store_true", help="tiny sizes (CPU smoke test via the interpreter)")
    parser.add_argument("--repeats", type=int, default=0, help="timed repeats per cell (default 20; tiny 2)")
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print(
            "verify_bench: error: --device cuda but CUDA is not available (use --device cpu --tiny)",
            file=sys.stderr,
        )
        return 2
    if args.device == "cpu" and "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"
    sizes = TINY if args.tiny else FULL
    repeats = args.repeats or (2 if args.tiny else 20)
    if args.device == "cuda":
        print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}", file=sys.stderr)
    rows = run(args.device, sizes, repeats)
    print(format_rows(rows, args.device))
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
