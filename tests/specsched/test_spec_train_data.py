"""The speculative dataset's train split (validate/data/spec_train.csv): every row cites the figure or table
it was read from, carries an acceptance, and SpecDecode-Bench's vLLM rows replay within the bands the
shipped knobs claim (validate/data/SPEC_SOURCES.md, "train")."""

from __future__ import annotations

import re
import statistics

from specsched.spec_knobs import shipped_band, shipped_spec_knobs
from validate.spec_cases import read_cases
from validate.spec_replay import replay

TRAIN = "validate/data/spec_train.csv"
NAMES_ITS_SOURCE = re.compile(r"\b(Figure|Table)\s+\d+", re.IGNORECASE)


def _rows():
    import csv

    with open(TRAIN, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_every_train_row_names_its_figure_or_table_and_carries_an_acceptance():
    for row in _rows():
        assert row["split"] == "train"
        assert NAMES_ITS_SOURCE.search(row["quote"]), row["case_id"]  # the quote says where it was read
        assert row["acceptance_length"].strip() or row["acceptance_rates"].strip(), row["case_id"]
    plotted = [r for r in _rows() if "read off" in r["quote"]]
    assert plotted and all("±" in r["quote"] for r in plotted)  # a value read off a plot says its precision


def test_specdecode_bench_vllm_rows():
    cases = [c for c in read_cases(TRAIN) if c.source == "specdecode-bench" and c.engine == "vllm"]
    assert len(cases) == 36  # Figure 1 (a)–(d): EAGLE and n-gram K = 3 on four datasets, n-gram K = 5 on (d)
    assert {c.batch for c in cases} == {1, 16, 64, 128}
    assert {(c.engine_version, c.gpu, c.tp, c.temperature) for c in cases} == {("0.10.1", "h100", 1, 0.0)}
    assert {c.drafter for c in cases} == {"eagle", "ngram"}
    eagle = [c.emitted for c in cases if c.drafter == "eagle"]
    assert all(2.2 < e < 2.7 for e in eagle)  # the traces' EAGLE-1 acceptance at K = 3 (vllm#20780: 2.29)


def test_specdecode_bench_sglang_rows():
    """Figure 2 (a), Qwen3-8B GSM8K on SGLang v0.5.9: chain k = 3 and tree k = 21 at batch 1 (the text's
    1.65x / 1.85x) and 16 / 64 / 128 (read off the vector figure), each at the text's accepted length and
    with the caption's attention backends (FlashAttention-3 for the chain, FlashInfer for the tree)."""
    cases = [c for c in read_cases(TRAIN) if c.source == "specdecode-bench" and c.engine == "sglang"]
    assert len(cases) == 8
    setup = {(c.engine_version, c.gpu, c.tp, c.model, c.k) for c in cases}
    assert setup == {("0.5.9", "h100", 1, "Qwen/Qwen3-8B", 3)}
    assert {c.drafter for c in cases} == {"eagle3"}  # the figure's legend and the authors' harness
    for shape, nodes, accepted, backend in (("chain", None, 2.25, "fa3"), ("tree", 20, 2.92, "flashinfer")):
        series = sorted((c for c in cases if c.shape == shape), key=lambda c: c.batch)
        assert [c.batch for c in series] == [1, 16, 64, 128]
        # the same acceptance at every batch; k = 21 is 20 drafted nodes and the root (rate 0.095 = 1.92 / 20)
        got = {(c.tree_nodes, c.emitted, c.attention_backend) for c in series}
        assert got == {(nodes, accepted, backend)}
        speedups = [c.measured for c in series]
        assert speedups == sorted(speedups, reverse=True)  # gains shrink with the batch
    tree = {c.batch: c.measured for c in cases if c.shape == "tree"}
    assert tree[64] < 1.0 and tree[128] < 1.0  # "by batch size 64, the k=21 tree falls below 1x speedup"


def test_shipped_band_covers_the_new_train_rows():
    band = shipped_band()
    assert band["cases"] == len(read_cases(TRAIN))
    assert band["median_pct"] <= 15.0 and band["loso_median_pct"] <= 15.0
    rows = replay([c for c in read_cases(TRAIN) if c.engine == "vllm"], shipped_spec_knobs())
    assert statistics.median(abs(r["error_pct"]) for r in rows) <= 10.0
