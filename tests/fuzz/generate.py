"""The fuzz catalogue by mechanism: every command, every input it reads, every class of bad input.

    python -m tests.fuzz.generate [--all | --sample N] [--only TEXT] [--show N] [--json FILE]

Commands and flags come from the CLI itself (tests.fuzz.discover), each flag's role and file kind from
tests.fuzz.kinds, the variants from tests.fuzz.mutate:

- every input slot (positional or flag) of a file kind: special files, then the seed's types,
  magnitudes, units and orderings (a folder kind: its own files' fields);
- every number / name / text / `--set` / choice flag: its value classes;
- every output flag: `/dev/full`, a folder where a file belongs (and a file where a folder does), a path
  under a regular file, the path of each of the command's inputs and a symlink onto it;
- every folder output: two writers started together on one `--out`.

A variant runs in a forked child (tests.fuzz.runner) and keeps the contract, or is listed with the
command that reproduces it. The default prints handled/total by command and kind over the full sweep
(`--all`, the default); the suite (tests/fuzz/test_generator.py) runs a deterministic `sample`.

May import: the standard library, tests.fuzz.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz import kinds, mutate, runner
from tests.fuzz.discover import Command, commands

LIMIT_S = 30.0  # one variant (a simulated run included) on 2 busy cores
SLOW_S = {"demo": 180.0}  # a command whose valid run is long (demo: a 56-cell sweep)
OUT_SUFFIX = {"pareto": ".png", "report": ".md", "trace convert": ".csv", "trace synth": ".csv"}
#: the commands that write a results folder: two of them on one --out
FOLDER_WRITERS = ("run", "disagg", "sweep", "search", "validate", "advise")
#: special files a reader may accept: an empty or cut file can be a legal (empty) input
MAY_ACCEPT = ("empty", "truncated", "huge-line")


@dataclass(frozen=True)
class Variant:
    command: str
    flag: str
    kind: str  # the file kind or role varied
    cls: str  # special, types, magnitudes, units, orderings, links, values, concurrency
    name: str
    argv: tuple[str, ...]  # {W}: the workspace
    files: dict = field(default_factory=dict, hash=False)
    expect: str = "either"  # "refuse": only exit 2 keeps the contract; "accept": only exit 0
    names: tuple[str, ...] = ()
    may_change: tuple[str, ...] = ()
    concurrent: bool = False

    @property
    def id(self) -> str:
        return f"{self.command} {self.flag} [{self.kind}] {self.cls}:{self.name}"


def seed_name(kind: str) -> str:
    suffix, _ = kinds.SEEDS[kind]()
    return {"run-dir": "run", "sweep-dir": "sweep"}.get(kind, f"seed-{kind}{suffix}")


def _fill(args, ws="{W}") -> list[str]:
    out = []
    for a in args:
        if a.startswith("{seed:"):
            a = f"{ws}/{seed_name(a[6:-1])}"
        out.append(a)
    return out


def _base(cmd: Command, vary: str | None, value: str | None, out: bool = True) -> list[str]:
    """The command's argv: its required inputs at their seeds, the varied flag at `value`."""
    pos, opts = [], []
    for f in cmd.flags:
        r = kinds.role(cmd.name, f)
        if f.label == vary:
            (pos if f.opt is None else opts).extend([value] if f.opt is None else [f.opt, value])
            opts += _fill(kinds.WITH.get((cmd.name, f.label), ()))
            continue
        required = f.required or (f.opt is None and f.nargs not in ("?", "*"))
        required = required or f.label in kinds.REQUIRED.get(cmd.name, ())
        if required and kinds.is_input(r):
            pos.append(f"{{W}}/{seed_name(r)}") if f.opt is None else opts.extend(
                [f.opt, f"{{W}}/{seed_name(r)}"]
            )
        elif out and f.opt == "--out" and r in ("out-dir", "out-file") and vary != "--out":
            opts += ["--out", "{W}/out" + ("" if r == "out-dir" else OUT_SUFFIX.get(cmd.name, ".json"))]
    return [*cmd.words, *pos, *_merge(opts, _fill(kinds.NEEDS.get(cmd.name, ())))]


def _pairs(args: list[str]) -> list[list[str]]:
    """argv split into [flag, value...] groups (a flag's values are the words up to the next flag)."""
    out: list[list[str]] = []
    for a in args:
        if a.startswith("--") or not out:
            out.append([a])
        else:
            out[-1].append(a)
    return out


def _merge(opts: list[str], needs: list[str]) -> list[str]:
    """opts, then each group of needs whose flag opts does not already give."""
    given = {g[0] for g in _pairs(opts)}
    seen: set[str] = set()
    out = []
    for g in _pairs(opts) + [g for g in _pairs(needs) if g[0] not in given]:
        if g[0] in seen and g[0] != "--set":
            continue
        seen.add(g[0])
        out += g
    return out


def _inputs(cmd: Command, argv: list[str]) -> list[str]:
    return sorted({a for a in argv if a.startswith("{W}/seed-") or a in ("{W}/run", "{W}/sweep")})


def file_variants(cmd: Command, label: str, kind: str, template: Path | None, argv_of=None) -> list[Variant]:
    """The variants of one input slot: `label` (a flag, a positional, or `--set KEY`) given the file
    `{W}/v-KIND.SUFFIX`; `argv_of(path)` builds the argv (default: the command's, the flag at `path`)."""
    suffix, seed = kinds.SEEDS[kind]()
    vname = "v-" + kind + suffix if not kind.endswith("-dir") else "v" + kind.split("-")[0]
    argv = tuple((argv_of or (lambda path: _base(cmd, label, path)))("{W}/" + vname))
    names = (vname, label.split()[-1])
    out = []
    for cls, name, content in mutate.special(kind, seed):
        expect = "either" if name in MAY_ACCEPT else "refuse"
        out.append(Variant(cmd.name, label, kind, cls, name, argv, {vname: content}, expect, names))
    if kind.endswith("-dir"):
        src = seed_name(kind)
        if template is None:
            return out
        for inner in kinds.FOLDER_FILES[kind]:
            data = (template / src / inner).read_bytes()
            for cls, name, content in mutate.fields(data, Path(inner).suffix):
                files = {vname: ("copy", src), f"{vname}/{inner}": content}
                out.append(Variant(cmd.name, label, kind, cls, f"{inner} {name}", argv, files, "either",
                                   (vname, inner, label)))  # fmt: skip
        return out
    for cls, name, content in mutate.fields(seed, suffix):
        out.append(Variant(cmd.name, label, kind, cls, name, argv, {vname: content}, "either", names))
    return out


def config_file_variants(cmd: Command, template: Path | None) -> list[Variant]:
    """Every file-valued config key (kinds.CONFIG_FILES) given through `--set KEY=FILE`."""
    out = []
    for key, (kind, extra) in kinds.CONFIG_FILES.items():
        tail = [a for item in extra for a in ("--set", item)]

        def argv_of(path: str, key=key, tail=tail) -> list[str]:
            return [*_base(cmd, "--set", f"{key}={path}"), *tail]

        out += file_variants(cmd, f"--set {key}", kind, template, argv_of)
    return out


def flag_variants(cmd: Command, f, role: str) -> list[Variant]:
    out = []
    for value in mutate.flag_values(role):
        argv = tuple(_base(cmd, f.label, value))
        names = (*f.aliases, f.dest, f.label.lstrip("-"), value[:40] if len(value) > 2 else "")
        cls = "values" if role != "number" else "magnitudes"
        out.append(Variant(cmd.name, f.label, role, cls, repr(value)[:24], argv, {}, "either", names))
    return out


def out_variants(cmd: Command, f, role: str) -> list[Variant]:
    probe = _base(cmd, f.label, "@@")
    inputs = _inputs(cmd, probe)
    cases = {"device": "{W}/full", "under a file": "{W}/afile/x"}  # never the real /dev/full: as root, a
    # command that renames its result over it would replace the machine's device node
    cases["a folder" if role == "out-file" else "a file"] = "{W}/adir" if role == "out-file" else "{W}/afile"
    for src in inputs:
        rel = src.removeprefix("{W}/")
        cases[f"onto {rel}"] = src
        cases[f"link onto {rel}"] = "{W}/lnk-" + rel
    out = []
    for name, value in cases.items():
        link = value.removeprefix("{W}/")
        files = {link: "SPECIAL_link:" + link.removeprefix("lnk-")} if link.startswith("lnk-") else {}
        files = {"full": "SPECIAL_full-device"} if name == "device" else files
        argv = tuple(_base(cmd, f.label, value))
        names = (f.label, value.rsplit("/", 1)[-1], value.replace("{W}/", ""))
        out.append(Variant(cmd.name, f.label, role, "links", name, argv, files, "refuse", names))
    if role == "out-dir" and cmd.name in FOLDER_WRITERS:
        argv = tuple(_base(cmd, f.label, "{W}/twice"))
        out.append(Variant(cmd.name, f.label, role, "concurrency", "two writers", argv, {}, "either",
                           (f.label, "twice"), concurrent=True))  # fmt: skip
    return out


def variants(template: Path | None, only: str = "") -> list[Variant]:
    """Every variant of every light command (kinds.HEAVY ones are classified, not generated); a folder
    kind's field variants need the `template` (its run and sweep are edited)."""
    out: list[Variant] = []
    for cmd in commands():
        if cmd.name in kinds.HEAVY or not cmd.flags:
            continue
        argv = tuple(_base(cmd, None, None))  # the seeds as they are: must be accepted
        out.append(Variant(cmd.name, "-", "seed", "seed", "as given", argv, {}, "accept"))
        for f in cmd.flags:
            r = kinds.role(cmd.name, f)
            if r in ("switch", "retired", "unknown"):
                continue
            if kinds.is_input(r):
                out += file_variants(cmd, f.label, r, template)
            elif r == "set" and cmd.name in kinds.SET_READS_FILES:
                out += flag_variants(cmd, f, r) + config_file_variants(cmd, template)
            elif r in ("out-file", "out-dir"):
                out += out_variants(cmd, f, r)
            else:
                out += flag_variants(cmd, f, r)
    return [v for v in out if only in v.id]


def _rank(v: Variant) -> str:
    return hashlib.sha256(v.id.encode()).hexdigest()


def sample(all_: list[Variant], per_flag: int, per_command: int = 0) -> list[Variant]:
    """A deterministic sample: per (command, flag), the `per_flag` variants whose id hashes lowest; then
    at most `per_command` of each command (0: no cap), again the lowest hashes."""
    groups: dict[tuple[str, str], list[Variant]] = {}
    for v in all_:
        groups.setdefault((v.command, v.flag), []).append(v)
    out = [v for group in groups.values() for v in sorted(group, key=_rank)[:per_flag]]
    if per_command:
        by_cmd: dict[str, list[Variant]] = {}
        for v in out:
            by_cmd.setdefault(v.command, []).append(v)
        out = [v for vs in by_cmd.values() for v in sorted(vs, key=_rank)[:per_command]]
    return out


def build_template(root: Path) -> Path:
    """The workspace every variant starts from: every kind's seed, a finished run and sweep, a file and a
    folder to point outputs at."""
    t = root / "template"
    t.mkdir()
    for kind, seed in kinds.SEEDS.items():
        suffix, data = seed()
        if not kind.endswith("-dir"):
            (t / seed_name(kind)).write_bytes(data)
    (t / "afile").write_bytes(b"keep me\n")
    (t / "adir").mkdir()
    for argv in (
        ["run", "--quiet", "--set", "workload.num_requests=20", "--out", str(t / "run")],
        ["sweep", str(t / seed_name("sweep")), "--out", str(t / "sweep"), "--model", kinds.FAKE, "--quiet"],
    ):
        status, code, _, err = runner.run(t, argv, 120)
        if code != 0:
            raise SystemExit(f"the template's {argv[0]} failed: {err[-400:]}")
    return t


def check(v: Variant, template: Path, case: Path, limit_s: float | None = None) -> str | None:
    """Why the variant breaks the contract (None when it keeps it)."""
    limit_s = limit_s or SLOW_S.get(v.command, LIMIT_S)
    ws = case / "w"
    runner.build(template, ws, v.files)
    argv = [a.replace("{W}", str(ws)) for a in v.argv]
    names = tuple(n.replace("{W}/", "") for n in v.names)
    may = ("out", "out.json", "out.csv", "out.md", "out.png", "twice", "seed-curves.json")
    may = may if v.command == "curves from-vllm" else may[:-1]
    before = runner.snapshot(ws)
    if not v.concurrent:
        result = runner.run(ws, argv, limit_s)
        return runner.judge(result, names, v.expect, before, runner.snapshot(ws), ws, may)
    started = [runner.start(ws, argv, tag) for tag in ("1", "2")]
    results = [runner.wait(*s, limit_s) for s in started]
    after = runner.snapshot(ws)
    for r in results:
        why = runner.judge(r, names, "either", before, after, ws, may)
        if why:
            return why
    if not any(r[1] == 0 for r in results):
        return "neither writer finished"
    leftovers = [p.name for p in ws.iterdir() if p.name.startswith((".tmp-", ".twice"))]
    return f"temporaries left: {leftovers}" if leftovers else None


def repro(v: Variant) -> str:
    return "specbed " + shlex.join(v.argv)


def sweep(only: str, per_flag: int, show: int = 0) -> tuple[list[Variant], dict[str, str | None]]:
    """(the variants, {id: why not handled | None}) of the full sweep or a sample."""
    results: dict[str, str | None] = {}
    with tempfile.TemporaryDirectory(prefix="fuzzgen-") as tmp:
        template = build_template(Path(tmp))
        vs = variants(template, only)
        vs = sample(vs, per_flag) if per_flag else vs
        for i, v in enumerate(vs):
            case = Path(tmp) / f"c{i}"
            case.mkdir()
            results[v.id] = check(v, template, case)
            shutil.rmtree(case, ignore_errors=True)
            if show and results[v.id]:
                print(f"  NOT HANDLED {v.id}: {results[v.id]}\n    {repro(v)}", flush=True)
    return vs, results


def tally(vs: list[Variant], results: dict) -> dict[str, list[int]]:
    table: dict[str, list[int]] = {}
    for v in vs:
        for key in (v.command, f"{v.command} / {v.kind}", f"class {v.cls}"):
            row = table.setdefault(key, [0, 0])
            row[1] += 1
            row[0] += results[v.id] is None
    return table


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.generate", description=__doc__.splitlines()[0])
    ap.add_argument("--all", action="store_true", help="every variant (the default)")
    ap.add_argument("--sample", type=int, default=0, help="only N variants per (command, flag)")
    ap.add_argument("--only", default="", help="only variants whose id contains this")
    ap.add_argument("--show", type=int, default=1, help="list the variants not handled (0: no)")
    ap.add_argument("--list", action="store_true", help="print the variants, run nothing")
    ap.add_argument("--json", help="write {variant id: why not handled | null} here")
    args = ap.parse_args(argv)
    os.chdir(kinds.ROOT)
    if args.list:
        vs = variants(None, args.only)
        vs = sample(vs, args.sample) if args.sample else vs
        print("\n".join(f"{v.id}\n    {repro(v)}" for v in vs))
        print(f"{len(vs)} variants")
        return 0
    runner.preload()  # once; every child inherits the modules
    start = time.monotonic()
    vs, results = sweep(args.only, args.sample, show=args.show)
    for key, (ok, n) in sorted(tally(vs, results).items()):
        print(f"  {key:<44} {ok:4d}/{n:<4d} handled")
    ok = sum(r is None for r in results.values())
    print(f"handled: {ok}/{len(vs)} in {time.monotonic() - start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
