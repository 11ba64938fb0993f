"""Offline training data in three domains, as bytes: code, prose and math.

Role: everything the target and the drafters are trained and evaluated on, built without network access
and deterministically from a seed:
- code: the Python standard library's own top-level source files, read from the running interpreter
  (`sysconfig.get_paths()["stdlib"]`, sorted by name);
- prose: `pydoc_data.topics` (the documentation shipped with Python) plus the module, class and function
  docstrings of the same stdlib files (parsed with `ast`, never imported);
- math: generated arithmetic problems with worked answers (one `numpy.random.Generator` per build).
Documents are split into train / val / test by a seeded permutation (about 90/5/5, at least one document
in each). Tokens are bytes 0..255 (`VOCAB = 256`); byte 0 separates documents (it never occurs in text).
The simulator names its domains chat/math/code; the alias ("prose" is the simulator's "chat") lives in
`specsched.contracts.domains`, the one place both sides read it from.

Requests: `requests_for(corpus, domain, n, ...)` cuts engine requests (prompts from a split, seeded noise
keys) for the trainer's STS rollouts and for engine.measure.

Sampling: `Corpus.batch(split, n, length, gen)` draws `n` windows of `length` bytes, the domain of each
row uniform, the start uniform over the domain's concatenated stream; all draws from one torch.Generator.

May import: numpy, torch, stdlib, `specsched.contracts.domains`, engine.loop and engine.sampling (requests).
"""

from __future__ import annotations

import ast
import sysconfig
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from engine.loop import Request
from engine.sampling import SamplingParams
from specsched.contracts.domains import ENGINE_DOMAINS as DOMAINS

VOCAB = 256
SEP = 0
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class DataConfig:
    """How much of each domain to build (bytes, approximate) and the seed of the math generator/splits."""

    code_bytes: int = 3_000_000
    prose_bytes: int = 2_000_000
    math_bytes: int = 2_000_000
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("code_bytes", "prose_bytes", "math_bytes"):
            if int(getattr(self, name)) < 10_000:
                raise ValueError(f"DataConfig field '{name}': must be >= 10000, got {getattr(self, name)}")
        if self.seed < 0:
            raise ValueError(f"DataConfig field 'seed': must be >= 0, got {self.seed}")


def stdlib_files() -> list[Path]:
    """The interpreter's top-level stdlib source files, sorted by name."""
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(p for p in root.glob("*.py") if p.is_file())


def _clean(text: str) -> bytes:
    # Tabs and exotic characters are rare; keep ASCII bytes only so the vocabulary is what is seen.
    return text.replace("\x00", " ").encode("ascii", errors="ignore")


def code_documents(limit: int) -> list[bytes]:
    docs, total = [], 0
    for path in stdlib_files():
        data = _clean(path.read_text(encoding="utf-8", errors="ignore"))
        if len(data) < 200:
            continue
        docs.append(data)
        total += len(data)
        if total >= limit:
            break
    return docs


def prose_documents(limit: int) -> list[bytes]:
    import pydoc_data.topics as topics

    docs, total = [], 0
    for key in sorted(topics.topics):
        docs.append(_clean(topics.topics[key]))
        total += len(docs[-1])
    for path in stdlib_files():
        if total >= limit:
            break
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="ignore"))
        except SyntaxError:
            continue
        nodes = [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)]
        parts = [ast.get_docstring(n) for n in nodes]
        text = "\n\n".join(p for p in parts if p and len(p) > 40)
        if len(text) > 200:
            docs.append(_clean(text))
            total += len(docs[-1])
    return docs


_NAMES = ("Ada", "Ben", "Cleo", "Dan", "Eve", "Finn", "Gus", "Hana", "Ivan", "Jo")
_ITEMS = ("apples", "books", "coins", "marbles", "pens", "stamps", "tickets", "cards")


def _problem(rng: np.random.Generator) -> str:
    """One arithmetic problem with a worked answer (several templates)."""
    kind = int(rng.integers(0, 5))
    a, b, c = (int(x) for x in rng.integers(2, 100, size=3))
    if kind == 0:
        op = "+-*"[int(rng.integers(0, 3))]
        r = a + b if op == "+" else a - b if op == "-" else a * b
        return f"Q: What is {a} {op} {b}?\nA: {a} {op} {b} = {r}. The answer is {r}.\n"
    if kind == 1:
        s = a * b
        return (
            f"Q: Compute ({a} * {b}) + {c}.\nA: First {a} * {b} = {s}. Then {s} + {c} = {s + c}. "
            f"The answer is {s + c}.\n"
        )
    if kind == 2:
        name, item = _NAMES[int(rng.integers(0, len(_NAMES)))], _ITEMS[int(rng.integers(0, len(_ITEMS)))]
        return (
            f"Q: {name} has {a} {item} and buys {b} more, then gives away {c}. How many {item} are left?\n"
            f"A: {a} + {b} = {a + b}. {a + b} - {c} = {a + b - c}. The answer is {a + b - c}.\n"
        )
    if kind == 3:
        q = a * b
        return f"Q: What is {q} / {a}?\nA: {a} * {b} = {q}, so {q} / {a} = {b}. The answer is {b}.\n"
    x = int(rng.integers(1, 50))
    rhs = a * x + b
    return (
        f"Q: Solve {a}x + {b} = {rhs}.\nA: {a}x = {rhs} - {b} = {rhs - b}. x = {rhs - b} / {a} = {x}. "
        f"The answer is {x}.\n"
    )


def math_documents(limit: int, rng: np.random.Generator) -> list[bytes]:
    docs, total = [], 0
    while total < limit:
        text = "\n".join(_problem(rng) for _ in range(int(rng.integers(4, 12))))
        docs.append(text.encode("ascii"))
        total += len(docs[-1])
    return docs


class Corpus:
    """Per (domain, split): one uint8 stream of documents joined by SEP. Build with `Corpus.build`."""

    def __init__(self, streams: dict[tuple[str, str], np.ndarray]) -> None:
        self.streams = streams

    @classmethod
    def build(cls, cfg: DataConfig = DataConfig()) -> Corpus:
        ss = np.random.SeedSequence(cfg.seed)
        math_rng, split_rng = (np.random.default_rng(s) for s in ss.spawn(2))
        docs = {
            "code": code_documents(cfg.code_bytes),
            "prose": prose_documents(cfg.prose_bytes),
            "math": math_documents(cfg.math_bytes, math_rng),
        }
        streams = {}
        for dom in DOMAINS:
            d = docs[dom]
            if len(d) < 3:
                raise ValueError(f"data domain '{dom}': only {len(d)} documents found")
            order = split_rng.permutation(len(d))
            n_hold = max(1, len(d) // 20)
            parts = {"test": order[:n_hold], "val": order[n_hold : 2 * n_hold], "train": order[2 * n_hold :]}
            for split, idx in parts.items():
                joined = bytes([SEP]).join(d[i] for i in sorted(idx.tolist())) + bytes([SEP])
                streams[(dom, split)] = np.frombuffer(joined, dtype=np.uint8).copy()
        return cls(streams)

    def stream(self, domain: str, split: str) -> np.ndarray:
        if domain not in DOMAINS or split not in SPLITS:
            raise ValueError(f"Corpus.stream: unknown domain/split {domain!r}/{split!r}")
        return self.streams[(domain, split)]

    def sizes(self) -> dict[str, int]:
        return {f"{d}/{s}": int(v.size) for (d, s), v in self.streams.items()}

    def batch(
        self, split: str, n: int, length: int, gen: torch.Generator, domain: str | None = None
    ) -> torch.Tensor:
        """int64 [n, length] windows; the domain of each row uniform over DOMAINS (or the given one)."""
        doms = torch.randint(0, len(DOMAINS), (n,), generator=gen) if domain is None else None
        out = torch.empty((n, length), dtype=torch.int64)
        for i in range(n):
            dom = domain if domain is not None else DOMAINS[int(doms[i])]
            s = self.stream(dom, split)
            if s.size <= length:
                raise ValueError(f"domain '{dom}' split '{split}' is shorter than {length} bytes")
            start = int(torch.randint(0, s.size - length, (1,), generator=gen))
            out[i] = torch.from_numpy(s[start : start + length].astype(np.int64))
        return out

    def prompts(
        self, domain: str, n: int, length: int, seed: int, split: str = "test"
    ) -> list[tuple[int, ...]]:
        """`n` prompts of `length` bytes from `split` of `domain`, each starting after a newline and holding
        no SEP byte (so a prompt never spans two documents); deterministic in `seed`."""
        s = self.stream(domain, split)
        rng = np.random.default_rng(seed)
        starts = np.flatnonzero(s[: -length - 1] == ord("\n")) + 1
        out: list[tuple[int, ...]] = []
        for _ in range(50 * n):
            if len(out) == n or starts.size == 0:
                break
            st = int(starts[int(rng.integers(0, starts.size))])
            window = s[st : st + length]
            if window.size == length and not (window == SEP).any():
                out.append(tuple(int(x) for x in window))
        if len(out) < n:
            raise ValueError(f"domain '{domain}': could not cut {n} prompts of {length} bytes")
        return out


def requests_for(
    corpus: Corpus,
    domain: str,
    n: int,
    prompt_len: int,
    new_tokens: int,
    *,
    seed: int,
    rid0: int = 0,
    split: str = "test",
    temperature: float = 1.0,
) -> list[Request]:
    """`n` requests of one domain: prompts cut from `split`, request seeds seed·10⁴ + i (noise keys)."""
    prompts = corpus.prompts(domain, n, prompt_len, seed, split=split)
    params = SamplingParams(temperature=temperature)
    return [Request(rid0 + i, p, new_tokens, params, seed=seed * 10_000 + i) for i, p in enumerate(prompts)]
