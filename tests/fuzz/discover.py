"""Every command of the CLI and its flags, read from the argparse parsers themselves (no hand list).

Role: `commands()` runs `specbed.cli.main` for each name of `specbed.cli.SUBCOMMANDS` with
`ArgumentParser.parse_args` patched to stop at the first parser the command builds; a parser with
sub-commands (`trace stats|convert|synth`, `cost fit|check|calibrate`) is opened into one `Command` per
sub-command, and a command that dispatches on its first word before building a parser (`engine`, whose
module lists its words in `COMMANDS`; `curves from-vllm`) is asked once per word. Entry points hidden
behind a flag (`validate --spec`, `cost calibrate --spec`) are in `HIDDEN`. A command that yields no parser
fails `tests/fuzz/test_generator.py`, so a new command is seen the day it lands.

May import: the standard library, specbed.cli (and, through it, each command's module).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
from dataclasses import dataclass

#: first words of commands that dispatch before building a parser, where the module has no `COMMANDS`
WORDS = {"curves": ("from-vllm",)}
#: entry points reached through a flag, not a word: (argv prefix that reaches the parser)
HIDDEN = (("validate", "--spec"), ("cost", "calibrate", "--spec"))
#: aliases that run another command's parser (`specbed vllm VERB` maps onto the old names)
SKIP = ("vllm",)


@dataclass(frozen=True)
class Flag:
    """One argument of a parser: `opt` is the option string (`--out`), or None for a positional."""

    opt: str | None
    dest: str
    aliases: tuple[str, ...]  # every option string (`-tp`, `--tp`, `--tensor-parallel-size`)
    nargs: object
    type_name: str | None  # "int", "float", a validator's name, or None (a plain string)
    choices: tuple | None
    switch: bool  # takes no value (store_true, help, a retired flag)
    required: bool

    @property
    def label(self) -> str:
        return self.opt or self.dest


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]  # argv prefix: ("trace", "stats"), ("validate", "--spec")
    prog: str
    flags: tuple[Flag, ...]

    @property
    def name(self) -> str:
        return " ".join(self.words)


class _Caught(BaseException):  # not an Exception: no command's handler swallows it
    def __init__(self, parser: argparse.ArgumentParser) -> None:
        super().__init__()
        self.parser = parser


def _stop(self, args=None, namespace=None):
    raise _Caught(self)


def grab(argv: list[str]) -> argparse.ArgumentParser | None:
    """The first parser `specbed argv` builds (None when it builds none)."""
    from specbed import cli

    saved = argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args
    argparse.ArgumentParser.parse_args = _stop  # type: ignore[method-assign]
    argparse.ArgumentParser.parse_known_args = _stop  # type: ignore[method-assign]
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            cli.main(list(argv))
    except _Caught as caught:
        return caught.parser
    finally:
        argparse.ArgumentParser.parse_args, argparse.ArgumentParser.parse_known_args = saved
    return None


def _flags(parser: argparse.ArgumentParser) -> tuple[Flag, ...]:
    out = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            continue
        kind = a.type if a.type is not None else None
        type_name = None if kind in (None, str) or getattr(kind, "__name__", "") == "Path" else kind.__name__
        out.append(
            Flag(
                opt=a.option_strings[-1] if a.option_strings else None,
                dest=a.dest,
                aliases=tuple(a.option_strings),
                nargs=a.nargs,
                type_name=type_name,
                choices=tuple(a.choices) if a.choices is not None else None,
                switch=a.nargs == 0,
                required=bool(a.required),
            )
        )
    return tuple(out)


def _open(words: tuple[str, ...], parser: argparse.ArgumentParser) -> list[Command]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [Command(words, parser.prog, _flags(parser))]
    out = []
    for name, sub in subs[0].choices.items():
        out += _open((*words, name), sub)
    return out


def commands() -> list[Command]:
    """Every command and sub-command, in SUBCOMMANDS order, then the hidden entry points."""
    from specbed import cli

    found: list[Command] = []
    for name, (module, _) in cli.SUBCOMMANDS.items():
        if name in SKIP:
            continue
        parser = grab([name])
        if parser is not None:
            found += _open((name,), parser)
            continue
        words = WORDS.get(name) or tuple(getattr(importlib.import_module(module), "COMMANDS", {}))
        for word in words:
            sub = grab([name, word])
            found += _open((name, word), sub) if sub is not None else [Command((name, word), "", ())]
        if not words:
            found.append(Command((name,), "", ()))  # no parser: test_generator names it
    for words in HIDDEN:
        parser = grab(list(words))
        found.append(Command(words, parser.prog if parser else "", _flags(parser) if parser else ()))
    return found
