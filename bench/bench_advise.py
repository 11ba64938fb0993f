"""`specbed advise` wall time on a one-hour trace (issue 35: ≤ 2 minutes on 2 cores).

Runs the serving engineer's command — Llama-3.1-70B, TP 4, H100, the shipped Azure 2023 conversation trace
(19,366 requests over 3,502 s) — in-process, and prints its wall time beside the goal, the options and loads
it swept, and its answers (gain at the lowest and highest load, where speculation stops paying, the K
schedule). Lengths are sampled from the trace; the load is swept as closed-loop concurrency
(`advise.sweep`), so the wall time does not grow with the trace's length.

May import: the standard library, `advise`.
"""

from __future__ import annotations

import time

ARGV = ["--model", "meta-llama/Llama-3.1-70B-Instruct", "--tensor-parallel-size", "4", "--gpu", "h100",
        "--traffic", "azure2023-conv", "--vllm-version", "0.15", "--quiet"]  # fmt: skip
GOAL_S = 120.0


def main() -> None:
    from advise.cli import _parser, advise

    t0 = time.perf_counter()
    doc = advise(_parser().parse_args(ARGV), ARGV, progress_on=False)
    wall = time.perf_counter() - t0
    runs = len(doc["runs"])
    print(f"specbed advise, one-hour trace (azure2023-conv): {wall:.1f} s wall for {runs} simulator runs "
          f"({len(doc['options'])} options × {len(doc['loads'])} loads) + the K schedule; "
          f"goal ≤ {GOAL_S:.0f} s")  # fmt: skip
    for key, label in doc["options"].items():
        pts = sorted((g for g in doc["gains"] if g["option"] == key), key=lambda g: g["users"])
        if pts:
            print(f"  {label}: gain {pts[0]['gain_pct']:+.0f} % at C={pts[0]['users']}, "
                  f"{pts[-1]['gain_pct']:+.0f} % at C={pts[-1]['users']}; "
                  f"stops paying: {doc['stops_paying'][key]}")  # fmt: skip
    print("  batch size -> K: " + ", ".join(f"{r['batch_size']}: {r['k']}" for r in doc["k_schedule"]))


if __name__ == "__main__":
    main()
