"""`specbed` console script: dispatches each subcommand to the module that owns it.

Each target module exposes ``main(argv: list[str]) -> int``; it is imported only when its subcommand
runs, so `specbed trace stats` never pays for torch. Bad input (`specsched.io.errors.InputError`, or a
`ValueError` from validating configs, files and flags) becomes one line on stderr and exit code 2. A
subcommand's argparse error (unknown flag, bad value) is one such line too, ending with a hint to
`--help`: while a subcommand runs, `argparse.ArgumentParser.error` raises an `InputError` instead of
printing the multi-line usage block (parsers that define their own `error` keep it).

The vLLM verbs are grouped: `specbed vllm curves|export|compare|validate|calibrate` runs `curves
from-vllm`, `export`, `compare`, `validate` and `cost calibrate`, whose old names are still read until the
next release. `specbed --version` prints the installed version.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys

from specsched.io import inputs
from specsched.io.errors import InputError

#: subcommand -> (module, one-line help). Modules may take a sub-subcommand (e.g. `trace stats`).
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("specbed.demo", "the main job on built-in defaults"),
    "plan": ("specbed.plan_cli", "print a scheduling policy's decisions for built-in scenarios"),
    "run": ("sim.cli", "run the serving simulator on one config"),
    "disagg": ("sim.disagg.cli", "run a prefill/decode-disaggregated config ([[pool]] tables)"),
    "trace": ("traces.cli", "trace stats / convert / synth"),
    "sweep": ("analysis.cli", "run a policy sweep"),
    "pareto": ("analysis.cli", "plot Pareto frontiers of a sweep"),
    "report": ("analysis.cli", "markdown report of a sweep"),
    "advise": ("advise.cli", "vLLM flags + traffic -> speculative config, gain by load, K schedule"),
    "search": ("analysis.search.cli", "cheapest deployment meeting an SLO, and its vllm serve line"),
    "verify": ("engine.cli", "run the losslessness suite of the real engine"),
    "engine": ("engine.measure.cli", "engine train / eval / profile / curves"),
    "fidelity": ("twin.cli", "engine vs simulator on the same closed-loop workload"),
    "cost": ("specbed.cost_cli", "cost fit / check: the roofline's knobs from measured steps"),
    "vllm": ("", "vLLM's files: curves | export | compare | validate | calibrate (specbed vllm --help)"),
    "validate": ("validate.cli", "measured vLLM runs vs the simulator's prediction of them"),
    "curves": ("bridge.cli", "curves from-vllm: a curves file from vLLM's acceptance counters"),
    "export": ("bridge.cli", "a run's results in vllm bench serve's shape"),
    "compare": ("bridge.cli", "a simulated run beside a vllm bench serve result"),
}
#: `specbed vllm VERB ...` -> (the subcommand that runs it, the arguments put before the user's)
VLLM: dict[str, tuple[str, tuple[str, ...], str]] = {
    "curves": ("curves", ("from-vllm",), "a curves file from vLLM's acceptance counters"),
    "export": ("export", (), "a simulator run in vllm bench serve's result shape"),
    "compare": ("compare", (), "a simulator run beside a vllm bench serve result"),
    "validate": ("validate", (), "measured vLLM runs vs the simulator's prediction of them"),
    "calibrate": ("cost", ("calibrate",), "fit one GPU's vLLM knobs to measured runs"),
}
#: the names the vLLM verbs had before `specbed vllm`: still read, until the next release
OLD_NAMES = ("validate", "curves", "export", "compare")


def _usage() -> str:
    lines = ["usage: specbed COMMAND [ARGS...]   (specbed --version)", "", "commands:"]
    lines += [f"  {name:<10} {help_}" for name, (_, help_) in SUBCOMMANDS.items() if name not in OLD_NAMES]
    lines += ["", "old names, kept until the next release: " + ", ".join(f"`{n}`" for n in OLD_NAMES)
              + ", `cost calibrate` (now `specbed vllm ...`)"]  # fmt: skip
    return "\n".join(lines)


def _vllm_usage() -> str:
    lines = ["usage: specbed vllm VERB [ARGS...]   (specbed vllm VERB --help)", "", "verbs:"]
    return "\n".join(lines + [f"  {verb:<10} {help_}" for verb, (_, _, help_) in VLLM.items()])


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("specbed")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _one_line_error(self: argparse.ArgumentParser, message: str):
    raise InputError(f"{message} (see '{self.prog} --help')")


@contextlib.contextmanager
def _one_line_argparse():
    """argparse errors as one-line InputErrors for the block (see the module docstring)."""
    original = argparse.ArgumentParser.error
    argparse.ArgumentParser.error = _one_line_error  # type: ignore[method-assign]
    try:
        yield
    finally:
        argparse.ArgumentParser.error = original  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    if argv[0] in ("--version", "-V"):
        print(f"specbed {_version()}")
        return 0
    name, rest = argv[0], argv[1:]
    if name == "vllm":
        if not rest or rest[0] in ("-h", "--help", "help"):
            print(_vllm_usage())
            return 0
        if rest[0] not in VLLM:
            print(f"specbed vllm: error: unknown verb '{rest[0]}' (choose from {', '.join(VLLM)})",
                  file=sys.stderr)  # fmt: skip
            return 2
        name, before, _ = VLLM[rest[0]]
        rest = [*before, *rest[1:]]
    if name not in SUBCOMMANDS or name == "vllm":
        print(
            f"specbed: error: unknown command '{name}' (choose from {', '.join(SUBCOMMANDS)})",
            file=sys.stderr,
        )
        return 2
    module_name = SUBCOMMANDS[name][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name != module_name:
            raise
        print(f"specbed: error: command '{name}' is not available in this build", file=sys.stderr)
        return 2
    # Modules that serve several subcommands receive the subcommand name first.
    entry = module.main
    shared = [n for n, (m, _) in SUBCOMMANDS.items() if m == module_name]
    call_argv = [name, *rest] if len(shared) > 1 else rest
    try:
        with _one_line_argparse(), inputs.collect_warnings(f"specbed {name}"):  # warnings: one line each
            return int(entry(call_argv) or 0)
    except SystemExit as exit_:  # argparse inside a subcommand: --help (0) or bad usage (2)
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except InputError as err:
        print(f"specbed {name}: error: {err}", file=sys.stderr)
        return 2
    except ValueError as err:
        msg = " ".join(str(err).split())
        print(f"specbed {name}: error: {msg}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"specbed {name}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `specbed ... | head` closed our stdout: not an error worth a traceback. Point stdout at devnull
        # so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


if __name__ == "__main__":  # `python -m specbed.cli …`, as `python -m specbed …`
    raise SystemExit(main())
