"""A pair of `vllm bench serve --save-result` files (with and without speculation) as speculative cases.

Role: `cases_from_pair(spec, base, deployment)` reads both result JSONs (`specsched.io.inputs`), takes the
acceptance from the speculative run's own counters (`spec_decode_num_drafts` and
`spec_decode_per_position_acceptance_rates`, checked by `bridge.read_json`: vLLM's rates are
unconditional, so E = 1 + Σ_i rate_i) and returns two `SpecCase`s of split "check" (a user's own runs are
replayed, never fitted unless given to `cost calibrate --spec` as a dataset file): the output-throughput
speedup (spec / base) and the speculative arm's mean TPOT. The batch is the runs' `max_concurrency` (a
closed loop); runs without it are reported as not modelled. The deployment the files do not name (GPU,
TP, drafter, engine version) comes from the command line.

May import: the standard library, `specsched`, `bridge.read_json`, `validate.spec_cases`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bridge.read_json import BENCH_DRAFTS, BENCH_RATES, _bench_one
from specsched.io import inputs
from specsched.io.errors import InputError
from specsched.price import find_model, get_gpu
from validate.spec_cases import DRAFTERS, SpecCase


@dataclass(frozen=True)
class Deployment:
    """What the result files do not say: GPU, TP, drafter, engine version (and the model when given)."""

    gpu: str = "h100"
    tp: int = 1
    drafter: str = "eagle3"
    engine_version: str = "0.15"
    model: str | None = None


def _doc(path: str) -> dict:
    doc = inputs.mapping(inputs.load_json(path, what="vllm bench result", nonfinite=True), file=path)
    return doc


def _positive(doc: dict, key: str, file: str) -> float:
    return inputs.number(doc.get(key), file=file, field=key, lo=1e-12, text=False)


def cases_from_pair(spec: str, base: str, dep: Deployment) -> list[SpecCase]:
    """[speedup case, tpot case] of one pair of result files (InputError naming file and field)."""
    if dep.drafter not in DRAFTERS:
        raise InputError(f"must be one of {', '.join(DRAFTERS)}; got {dep.drafter!r}", field="--drafter")
    gpu = get_gpu(dep.gpu, field="--gpu").key
    s, b = _doc(spec), _doc(base)
    if b.get(BENCH_DRAFTS):
        raise InputError(
            "the baseline run drafted (spec_decode_num_drafts > 0)", file=base, field=BENCH_DRAFTS
        )
    drafts, counts = _bench_one(spec, s)
    emitted = 1.0 + float(counts.sum()) / drafts if drafts else 1.0
    model = dep.model or str(s.get("model_id") or "")
    if find_model(model) is None:
        raise InputError(
            f"model {model!r} is not in the catalogue; pass --model", file=spec, field="model_id"
        )
    conc = [d.get("max_concurrency") for d in (s, b)]
    batch = None
    if conc[0] is not None:
        batch = int(
            inputs.number(conc[0], file=spec, field="max_concurrency", integer=True, lo=1, text=False)
        )
        if conc[1] != conc[0]:
            raise InputError(f"max_concurrency {conc[1]!r} differs from the speculative run's {conc[0]!r}",
                             file=base, field="max_concurrency")  # fmt: skip
    rate = None if batch is not None else float(s.get("request_rate") or 0.0)
    k = len(s[BENCH_RATES])
    common = dict(
        source=f"bench:{Path(spec).name}", split="check", engine="vllm", engine_version=dep.engine_version,
        gpu=gpu, tp=dep.tp, model=model, precision=None, drafter=dep.drafter, drafter_model="",
        shape="chain", k=k, tree_nodes=None, workload="vllm-bench", batch=batch, request_rate=rate,
        baseline=None, acceptance_length=min(emitted, 1.0 + k), acceptance_rates=None, line=0, file=spec,
    )  # fmt: skip
    speedup = _positive(s, "output_throughput", spec) / _positive(b, "output_throughput", base)
    tpot = _positive(s, "mean_tpot_ms", spec)
    name = Path(spec).stem
    return [
        SpecCase(case_id=f"{name}:speedup", metric="speedup", measured=speedup, **common),
        SpecCase(case_id=f"{name}:tpot", metric="tpot_ms", measured=tpot, **common),
    ]
