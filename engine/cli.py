"""`specbed verify`: the losslessness suite's command line.

Role: `verify [--backend torch|triton] [--quick]` runs the losslessness suite (engine.proof.suite) and prints
a table (property, cases tried, result); exit 1 if any property fails, 2 on bad usage or when the backend
cannot run here. `main` also accepts the subcommand name first (`["verify", ...]`). (`specbed engine` and
`specbed fidelity` live in engine.measure.cli and twin.cli.)

May import: stdlib, torch, engine.* (lazily, so `--help` stays fast).
"""

from __future__ import annotations

import argparse
import sys


def _verify(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="specbed verify", description="Run the engine's losslessness suite."
    )
    parser.add_argument(
        "--backend",
        choices=("torch", "triton"),
        default="torch",
        help="verifier backend (triton: CUDA, or the interpreter on CPU)",
    )
    parser.add_argument("--quick", action="store_true", help="fewer cases (a smoke test, a few seconds)")
    args = parser.parse_args(argv)
    import torch

    from engine.proof.suite import main_table
    from engine.verify_triton import TritonUnavailableError

    torch.set_num_threads(1)  # small tensors: one thread is fastest and immune to a busy neighbour core
    try:
        table, ok = main_table(args.backend, args.quick)
    except TritonUnavailableError as err:
        print(f"specbed verify: error: {err}", file=sys.stderr)
        return 2
    print(table)
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    """`specbed verify` flags, optionally preceded by the word "verify"."""
    argv = list(argv)
    if argv and argv[0] == "verify":
        argv = argv[1:]
    try:
        return _verify(argv)
    except SystemExit as exit_:  # argparse: --help (0) or bad usage (2)
        return int(exit_.code or 0)
