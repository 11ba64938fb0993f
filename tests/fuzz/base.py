"""Shared pieces of the CLI fuzz catalogue: the `Case` record and the good inputs the cases corrupt."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    category: str
    name: str
    argv: tuple[str, ...]
    files: dict[str, bytes] = field(default_factory=dict)
    expect: tuple[str, ...] = ()
    slow: bool = False  # imports torch: a longer time bound

    @property
    def id(self) -> str:
        return f"{self.category}:{self.name}"


GOOD_TOML = (
    b'seed = 1\n[workload]\nkind = "closed"\nnum_requests = 20\nconcurrency = 4\n'
    b'[cost]\ntable = "h200-v4flash"\n'
)

GOOD_CSV = b"tokens,seconds\n1,0.010\n64,0.012\n512,0.020\n4096,0.090\n"
GOOD_TRACE = b"arrival_s,input_tokens,output_tokens\n0.0,100,50\n0.5,200,20\n1.0,300,30\n"

SWEEP = b"""name = "fz"
[base]
seed = 0
[base.workload]
kind = "closed"
num_requests = 20
[axes]
"workload.concurrency" = [2, 4]
"""
OUT = ("--out", "{W}/sw")
RUN = ("run", "--quiet", "--set", "workload.num_requests=20")
