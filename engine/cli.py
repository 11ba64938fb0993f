"""`specbed verify | engine | fidelity`: the engine's command line (argv[0] is the subcommand).

Role: `verify [--backend torch|triton] [--quick]` runs the losslessness suite (engine.suite) and prints a
table (property, cases tried, result); exit 1 if any property fails, 2 on bad usage or when the backend
cannot run here. `engine` and `fidelity` belong to issue 7 and are not implemented yet.

May import: stdlib, torch, engine.* (lazily, so `--help` stays fast).
"""

from __future__ import annotations

import argparse
import sys


def _verify(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="specbed verify", description="Run the engine's losslessness suite.")
    parser.add_argument("--backend", choices=("torch", "triton"), default="torch",
                        help="verifier backend (triton: CUDA, or the interpreter on CPU)")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="fewer cases (a smoke test, a few seconds)")
    args = parser.parse_args(argv)
    import torch

    from engine.suite import main_table
    from engine.verify_triton import TritonUnavailableError

    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    try:
        table, ok = main_table(args.backend, args.quick)
    except TritonUnavailableError as err:
        print(f"specbed verify: error: {err}", file=sys.stderr)
        return 2
    print(table)
    return 0 if ok else 1


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: specbed {verify,engine,fidelity} [ARGS...]", file=sys.stderr)
        return 2
    command, rest = argv[0], list(argv[1:])
    if command == "verify":
        try:
            return _verify(rest)
        except SystemExit as exit_:  # argparse: --help (0) or bad usage (2)
            return int(exit_.code or 0)
    if command in ("engine", "fidelity"):
        print(f"specbed {command}: error: not yet implemented (issue 7)", file=sys.stderr)
        return 2
    print(f"specbed: error: engine.cli has no command {command!r}", file=sys.stderr)
    return 2
