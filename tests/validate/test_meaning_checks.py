"""Issue 36 item 3: measured inputs checked for meaning (specsched.io.meaning) — units, orderings, rates,
finite tables — in `specbed vllm validate` (RUNS.csv rows, bench files) and `specbed vllm compare`."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from bridge.bench import load_vllm_result
from specbed.cli import main
from specsched.io.errors import InputError
from specsched.io.meaning import check_bench_rates, check_metrics, metrics_of
from tests.validate.test_validate_cli import HEADER, PROFILES

BENCH = Path(__file__).resolve().parents[2] / "examples" / "vllm" / "bench_result.json"
#: a plausible row of the tiny profile (16 output tokens): e2e 200 ms, TTFT 20 ms, ITL 12 ms
ROW = dict(e2e_mean=200, e2e_p90=210, e2e_p99=220, ttft_mean=20, ttft_p90=25, ttft_p99=30, itl_mean=12)
ROW_PATTERN = r"^(?P<fam>e2e|ttft|itl)_(?P<stat>mean|p\d+)$"


def _metrics(**over):
    return metrics_of({**ROW, **over}, ROW_PATTERN, {"e2e": "e2e", "ttft": "ttft", "itl": "itl"})


@pytest.mark.parametrize(
    "over, field, words",
    [
        ({k: v / 1e3 for k, v in ROW.items() if k.startswith("e2e")}, "e2e_mean", "seconds"),
        ({"itl_mean": 0.012}, "itl_mean", "seconds"),
        ({"itl_mean": 12_000.0 * 1e3}, "itl_mean", "microseconds"),
        ({"ttft_mean": 0.02}, "ttft_mean", "seconds"),
        ({"e2e_p99": 150}, "e2e_p99", "below e2e_p90"),
        ({"ttft_p90": 300, "ttft_p99": 310}, "ttft_p90", "above e2e_p90"),
        ({"itl_mean": 1200}, "itl_mean", "other units"),
        ({"e2e_mean": -1}, "e2e_mean", "≥ 0"),
    ],
)
def test_a_summary_that_cannot_be_is_one_line_naming_its_field(over, field, words):
    with pytest.raises(InputError) as err:
        check_metrics(_metrics(**over), file="runs.csv", line=7, output_mean=16)
    assert err.value.field == field and err.value.line == 7 and words in err.value.message


def test_a_plausible_summary_passes():
    check_metrics(_metrics(), file="runs.csv", line=2, output_mean=16)


def test_bench_counts_against_rates():
    good = {"completed": 80, "duration": 20.0, "total_input_tokens": 100, "total_output_tokens": 5208,
            "request_throughput": 4.0, "output_throughput": 260.4, "request_rate": 4.0}  # fmt: skip
    check_bench_rates(good, file="b.json")
    bad = (({"completed": 0}, "completed"), ({"output_throughput": -5.0}, "output_throughput"),
           ({"request_throughput": 400.0}, "request_throughput"), ({"request_rate": 0.04}, "request_rate"),
           ({"duration": 0.0}, "duration"))  # fmt: skip
    for over, field in bad:
        with pytest.raises(InputError) as err:
            check_bench_rates({**good, **over}, file="b.json")
        assert err.value.field == field


def _bench(tmp_path, **over) -> str:
    doc = {**json.loads(BENCH.read_text()), **over}
    path = tmp_path / "b.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_compare_reads_the_example_and_refuses_what_cannot_be(tmp_path):
    load_vllm_result(BENCH)
    bad = (({"completed": 0}, "completed"), ({"total_token_throughput": -1.0}, "total_token_throughput"),
           ({"p99_ttft_ms": 1.0}, "p99_ttft_ms"), ({"mean_tpot_ms": 0.007}, "mean_tpot_ms"),
           ({"spec_decode_acceptance_rate": 250.0}, "spec_decode_acceptance_rate"))  # fmt: skip
    for over, field in bad:
        with pytest.raises(InputError) as err:
            load_vllm_result(_bench(tmp_path, **over))
        assert err.value.field == field, err.value


def _runs(tmp_path, **over) -> list[str]:
    cells = {**ROW, **over}
    metrics = ",".join(str(cells[k]) for k in ROW)
    row = f"1,1-q,Qwen/Qwen2.5-7B-Instruct,H100,1,,tiny,256,,,FP16,{metrics}\n"
    (tmp_path / "runs.csv").write_text(HEADER + row)
    (tmp_path / "p.json").write_text(json.dumps(PROFILES))
    return ["validate", str(tmp_path / "runs.csv"), "--workloads", str(tmp_path / "p.json")]


def _last_err(capsys) -> str:
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_validate_refuses_a_column_in_seconds_naming_file_row_and_field(tmp_path, capsys):
    assert main(_runs(tmp_path, itl_mean=0.012)) == 2
    assert re.search(r"runs.csv:2: field 'actual_itl_mean': .*seconds", _last_err(capsys))


def test_validate_refuses_profile_rates_the_run_could_not_have_served(tmp_path, capsys):
    fast = copy.deepcopy(PROFILES)
    fast["workloads"]["tiny"]["stages"][0]["rate"] = 2000.0
    argv = _runs(tmp_path)
    (tmp_path / "p.json").write_text(json.dumps(fast))
    assert main(argv) == 2
    assert re.search(r"runs.csv:2: field 'workload': .*Little's law", _last_err(capsys))


def test_unknown_precision_names_its_row(tmp_path, capsys):
    argv = _runs(tmp_path)
    text = (tmp_path / "runs.csv").read_text().replace(",FP16,", ",FP7,")
    (tmp_path / "runs.csv").write_text(text)
    assert main(argv) == 2
    assert re.search(r"no run could be modelled.*runs.csv:2: field 'precision'", _last_err(capsys))


def test_a_bench_of_one_token_outputs_prints_no_inf(tmp_path, capsys):
    doc = json.loads(BENCH.read_text())
    n = len(doc["input_lens"])
    dur, tin = doc["duration"], doc["total_input_tokens"]
    one = {"output_lens": [1] * n, "itls": [[]] * n, "total_output_tokens": n,
           "output_throughput": n / dur, "total_token_throughput": (n + tin) / dur,
           **{k: 0.0 for k in doc if k.endswith(("_tpot_ms", "_itl_ms"))},
           **{f"{s}_e2el_ms": doc[f"{s}_ttft_ms"] for s in ("mean", "median", "p99")}}  # fmt: skip
    assert main(["validate", _bench(tmp_path, **one)]) == 0
    out = capsys.readouterr().out
    assert "inf" not in out and "nan" not in out.lower()


def test_a_bench_list_in_milliseconds_is_refused(tmp_path, capsys):
    doc = json.loads(BENCH.read_text())
    assert main(["validate", _bench(tmp_path, itls=[[g * 1e3 for g in r] for r in doc["itls"]])]) == 2
    assert re.search(r"b.json: field 'itls'", _last_err(capsys))


def test_a_bench_files_max_concurrency_is_read_strictly_and_kept(tmp_path):
    """vllm bench serve --max-concurrency N: the replay keeps N requests in flight (a closed loop); a bad
    cap is one line naming the field."""
    import json

    from specsched.io.errors import InputError
    from specsched.price.vllm import VllmSpec
    from validate.runs import read_bench

    doc = json.loads(open("examples/vllm/bench_result.json").read())
    spec = VllmSpec("llama3.1-8b", gpu="h100")
    for cap, want in ((2, 2), (None, None)):
        p = tmp_path / f"b{cap}.json"
        p.write_text(json.dumps({**doc, "max_concurrency": cap}))
        assert read_bench(p, spec).concurrency == want
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**doc, "max_concurrency": "x"}))
    with pytest.raises(InputError) as err:
        read_bench(bad, spec)
    assert err.value.field == "max_concurrency"
