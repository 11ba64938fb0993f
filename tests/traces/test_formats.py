"""Each trace format from small fixtures: values, units, detection, gzip, and the CSV block reader."""

from __future__ import annotations

import csv
import gzip
import io
import re
import tempfile
import warnings
from pathlib import Path
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import traces
from traces import _columns, _parse
from traces.export import as_csv_text

from .conftest import AZURE_2023, AZURE_2024, BURSTGPT_V1, BURSTGPT_V2, FIXTURES, MOONCAKE, VIDUR


def test_azure_2023_seven_fractional_digits(write):
    t = traces.load(write("a.csv", AZURE_2023))
    assert t.meta["format"] == "azure" and len(t) == 4
    np.testing.assert_allclose(t.arrival_s, [0.0, 4.314579, 4.541877, 4.710427], atol=1e-9)
    assert t.input_tokens.tolist() == [374, 396, 879, 91]
    assert t.output_tokens.tolist() == [44, 109, 55, 16]
    assert t.arrival_s.dtype == np.float64 and t.input_tokens.dtype == np.int64


def test_azure_2024_offsets_and_variable_fractions(write):
    t = traces.load(write("a.csv", AZURE_2024))
    # 02:00:02.5+02:00 is 00:00:02.5 UTC
    np.testing.assert_allclose(t.arrival_s, [0.0, 0.99007, 2.49007], atol=1e-9)


def test_burstgpt_v1_drops_failed_with_count(write):
    t = traces.load(write("b.csv", BURSTGPT_V1))
    assert len(t) == 3 and t.meta["dropped_rows"] == 2 and t.meta["rows_read"] == 5
    assert t.arrival_s.tolist() == [0.0, 113.0, 125.0]
    assert t.model.tolist() == ["ChatGPT", "GPT-4", "GPT-4"]
    assert t.domain.tolist() == ["Conversation log", "Conversation log", "API log"]
    assert t.session_id is None and t.meta["variant"] == "v1"
    kept = traces.load(write("b.csv", BURSTGPT_V1), drop_failed=False)
    assert len(kept) == 5 and kept.meta["dropped_rows"] == 0 and kept.output_tokens.min() == 0


def test_burstgpt_filters(write):
    path = write("b.csv", BURSTGPT_V1)
    gpt4 = traces.load(path, model="gpt-4")
    assert gpt4.model.tolist() == ["GPT-4", "GPT-4"] and gpt4.meta["filtered_rows"] == 3
    assert gpt4.arrival_s[0] == 0.0  # relative to the first kept request
    api = traces.load(path, log_type="api", drop_failed=False)
    assert api.domain.tolist() == ["API log", "API log"]
    both = traces.load(path, model=["ChatGPT", "GPT-4"], log_type="Conversation log")
    assert len(both) == 2


def test_burstgpt_v2_sessions_numbered_in_order(write):
    t = traces.load(write("b2.csv", BURSTGPT_V2))
    assert t.meta["variant"] == "v2"
    assert t.session_id.tolist() == [0, 1, 0, -1]  # same UUID → same id; blank → -1
    assert t.arrival_s.tolist() == [0.0, 51.0, 82.0, 144.0]


def test_mooncake_ms_and_hash_ids(write):
    t = traces.load(write("m.jsonl", MOONCAKE))
    assert t.meta["format"] == "mooncake"
    assert t.arrival_s.tolist() == [0.0, 2.0, 2.5]
    assert [h.tolist() for h in t.hash_ids] == [[0, 1, 2], [0, 3], []]
    assert t.input_tokens.tolist() == [6955, 1024, 512]


def test_vidur_with_an_index_column(write):
    text = ",arrived_at,num_prefill_tokens,num_decode_tokens,extra\n0,0.0,591,140,x\n1,0.125,547,248,y\n"
    t = traces.load(write("v.csv", text))
    assert t.meta["format"] == "vidur"
    assert t.arrival_s.tolist() == [0.0, 0.125] and t.output_tokens.tolist() == [140, 248]


@pytest.mark.parametrize(
    ("unit", "values", "expected"),
    [
        ("s", ["10", "11.5"], [0.0, 1.5]),
        ("ms", ["1000", "2500"], [0.0, 1.5]),
        ("us", ["1000000", "2500000"], [0.0, 1.5]),
        ("ns", ["1000000000", "2500000000"], [0.0, 1.5]),
        ("datetime", ["2024-01-01T00:00:00", "2024-01-01T00:00:01.5"], [0.0, 1.5]),
    ],
)
def test_generic_csv_with_mapping(write, unit, values, expected):
    text = "when,prompt,gen,kind\n" + "".join(f"{v},{i + 10},{i + 1},chat\n" for i, v in enumerate(values))
    cols = {"arrival": "when", "input": "prompt", "output": "gen", "time_unit": unit, "domain": "kind"}
    t = traces.load(write("g.csv", text), columns=cols)
    assert t.meta["format"] == "csv"
    np.testing.assert_allclose(t.arrival_s, expected)
    assert t.input_tokens.tolist() == [10, 11] and t.domain.tolist() == ["chat", "chat"]


def test_mapping_reads_json_lines_and_renames_a_known_format(write):
    text = '{"t": 5, "p": 3, "o": 2}\n{"t": 7, "p": 4, "o": 1}\n'
    t = traces.load(write("g.jsonl", text), columns={"arrival": "t", "input": "p", "output": "o"})
    assert t.arrival_s.tolist() == [0.0, 2.0]
    renamed = BURSTGPT_V1.replace("Timestamp", "Time")
    b = traces.load(write("b.csv", renamed), format="burstgpt", columns={"arrival": "Time"})
    assert len(b) == 3 and b.model is not None


@pytest.mark.parametrize("key", list(FIXTURES))
def test_autodetect_and_forced_format(write, key):
    name, text = FIXTURES[key]
    expected = {"azure2024": "azure", "burstgpt2": "burstgpt"}.get(key, key)
    auto = traces.load(write(name, text))
    forced = traces.load(write(name, text), format=expected)
    assert auto.meta["format"] == forced.meta["format"] == expected
    np.testing.assert_array_equal(auto.arrival_s, forced.arrival_s)


@pytest.mark.parametrize("key", list(FIXTURES))
def test_gzip_is_transparent(write, key):
    name, text = FIXTURES[key]
    plain = traces.load(write(name, text))
    gz = traces.load(write(name + ".gz", text, gz=True))
    np.testing.assert_array_equal(plain.arrival_s, gz.arrival_s)
    np.testing.assert_array_equal(plain.output_tokens, gz.output_tokens)


def test_crlf_bom_quotes_and_blank_lines(write):
    text = '\ufeffarrived_at,num_prefill_tokens,num_decode_tokens\r\n0,1,2\r\n\r\n"1.5","3",4\r\n'
    t = traces.load(write("v.csv", text))
    assert t.arrival_s.tolist() == [0.0, 1.5] and t.input_tokens.tolist() == [1, 3]


def test_integral_float_token_counts(write):
    t = traces.load(write("v.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n0,12.0,3e1\n"))
    assert t.input_tokens.tolist() == [12] and t.output_tokens.tolist() == [30]


def test_unsorted_timestamps_sorted_with_warning(write):
    text = "arrived_at,num_prefill_tokens,num_decode_tokens\n3,1,1\n1,2,1\n2,3,1\n4,4,1\n"
    with pytest.warns(traces.TraceOrderWarning, match="3 of 4 requests were out of time order"):
        t = traces.load(write("v.csv", text))
    assert t.arrival_s.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert t.input_tokens.tolist() == [2, 3, 1, 4] and t.meta["moved_rows"] == 3


def test_sorted_trace_gives_no_warning(write):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traces.load(write("v.csv", VIDUR))


def test_block_boundaries_and_slow_path_match(write, monkeypatch):
    """Tiny blocks force every line across block edges and a mix of fast and csv-module blocks."""
    rng = np.random.default_rng(7)
    n = 300
    t = np.sort(rng.uniform(0, 100, n)).round(3)
    inp, out = rng.integers(0, 5000, n), rng.integers(1, 500, n)
    rows = [f"{a},{i},{o}" if k % 37 else f'"{a}",{i},"{o}"' for k, (a, i, o) in enumerate(zip(t, inp, out))]
    text = "arrived_at,num_prefill_tokens,num_decode_tokens\n" + "\n".join(rows) + "\n\n"
    monkeypatch.setattr(_parse, "BLOCK_CHARS", 53)
    got = traces.load(write("v.csv", text))
    np.testing.assert_allclose(got.arrival_s, t - t[0])
    assert got.input_tokens.tolist() == inp.tolist() and got.output_tokens.tolist() == out.tolist()


def test_error_line_numbers_survive_small_blocks(write, monkeypatch):
    rows = [f"{k},{k},{k + 1}" for k in range(200)]
    rows[150] = "150,abc,151"
    monkeypatch.setattr(_parse, "BLOCK_CHARS", 64)
    with pytest.raises(traces.formats.InputError, match=r"v\.csv:152: field 'num_prefill_tokens'"):
        traces.load(write("v.csv", "arrived_at,num_prefill_tokens,num_decode_tokens\n" + "\n".join(rows)))


def test_specbed_csv_roundtrip_keeps_every_column(write):
    t = traces.load(write("b2.csv", BURSTGPT_V2))
    m = traces.load(write("m.jsonl", MOONCAKE))
    for table in (t, m, traces.merge(t, m)):
        back = traces.load(write("n.csv", as_csv_text(table)))
        assert back.meta["format"] == "specbed"
        assert back.columns() == table.columns()
        np.testing.assert_array_equal(back.arrival_s, table.arrival_s)
        for name in ("input_tokens", "output_tokens", "domain", "model", "session_id"):
            a, b = getattr(back, name), getattr(table, name)
            assert (a is None and b is None) or a.tolist() == b.tolist()
        if table.hash_ids is not None:
            assert [h.tolist() for h in back.hash_ids] == [h.tolist() for h in table.hash_ids]


def test_parquet_roundtrip(tmp_path):
    pytest.importorskip("pyarrow")
    t = traces.merge(traces.load("azure2023-code"), traces.load("azure2023-conv"))
    path = traces.save(t, tmp_path / "t.parquet")
    back = traces.load(path)
    assert back.meta["format"] == "parquet" and len(back) == len(t) == 19366 + 8819
    np.testing.assert_array_equal(back.arrival_s, t.arrival_s)
    assert back.domain.tolist() == t.domain.tolist()


def test_datetime_parser_is_vectorized_and_exact():
    values = ["2023-11-16 18:17:03.9799600", "2023-11-16 18:17:04.0319600", "2023-11-16T18:17:04Z"]
    ns = _columns.to_datetime_ns(values[:2], file="f", field="T", where=lambda k: k + 2)
    assert int(ns[1] - ns[0]) == 52_000_000
    z = _columns.to_datetime_ns(values[2:], file="f", field="T", where=lambda k: k + 2)
    assert int(z[0] - ns[0]) == 20_040_000  # 04.0000000 − 03.9799600 s


def test_spaces_after_commas(write):
    text = "TIMESTAMP, ContextTokens, GeneratedTokens\n2023-11-16 18:15:46.5, 374, 44\n"
    text += "2023-11-16 18:15:47, 5, 6\n"
    t = traces.load(write("a.csv", text))
    assert t.arrival_s.tolist() == [0.0, 0.5] and t.input_tokens.tolist() == [374, 5]


def test_unsorted_json_lines_keep_hash_ids_with_their_rows(write):
    text = MOONCAKE.splitlines()
    with pytest.warns(traces.TraceOrderWarning, match="3 of 3"):
        t = traces.load(write("m.jsonl", "\n".join([text[2], text[0], text[1]]) + "\n"))
    assert [h.tolist() for h in t.hash_ids] == [[0, 1, 2], [0, 3], []]
    assert t.input_tokens.tolist() == [6955, 1024, 512]


@settings(max_examples=40)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 10**6),
            st.integers(0, 10**5),
            st.integers(0, 10**4),
            st.sampled_from(["a", "b, c"]),
        ),
        min_size=1,
        max_size=40,
    ),
    st.integers(8, 200),
    st.booleans(),
)
def test_csv_reader_matches_the_csv_module(rows, block, gz):
    """Any mix of plain and quoted rows, split into any block size, reads like csv.reader would."""
    rows = sorted(rows)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([("ts", "inp", "out", "kind"), *rows])
    data = buf.getvalue().encode()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.csv"
        path.write_bytes(gzip.compress(data) if gz else data)
        cols = {"arrival": "ts", "input": "inp", "output": "out", "domain": "kind", "time_unit": "ms"}
        with patch.object(_parse, "BLOCK_CHARS", block):
            t = traces.load(path, columns=cols, drop_failed=False)
    assert t.input_tokens.tolist() == [r[1] for r in rows]
    assert t.domain.tolist() == [r[3] for r in rows]
    np.testing.assert_allclose(t.arrival_s, [(r[0] - rows[0][0]) / 1000 for r in rows])


def test_progress_report_on_stderr(write, capsys):
    src = _parse.TextSource(write("v.csv", VIDUR * 50), progress=True)
    with src:
        src._last -= 10  # pretend the read has been running for a while
        src.read(100)
    assert re.match(r"reading .*v\.csv: \d+% \(ETA \d+ s\)\n$", capsys.readouterr().err)
