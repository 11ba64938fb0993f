"""Every bad-input case raises InputError whose one-line message names file, line and column."""

from __future__ import annotations

import gzip
import re

import pytest

import traces
from specsched.io.errors import InputError

from .conftest import AZURE_2023, BURSTGPT_V1, MOONCAKE

VIDUR_HEAD = "arrived_at,num_prefill_tokens,num_decode_tokens\n"

# (file name, content, load kwargs, line, column, words the message must contain)
CASES = [
    (
        "missing-col.csv",
        AZURE_2023.replace(",GeneratedTokens", ""),
        {},
        1,
        "GeneratedTokens",
        "missing column",
    ),
    (
        "renamed.csv",
        BURSTGPT_V1.replace("Response tokens", "Response_tokens"),
        {},
        1,
        "Response tokens",
        "looks like a burstgpt",
    ),
    ("forced.csv", AZURE_2023, {"format": "vidur"}, 1, "arrived_at", "missing column"),
    ("unknown.csv", "a,b,c\n1,2,3\n", {}, 1, "header", "unrecognised header"),
    ("text-tokens.csv", AZURE_2023.replace("879", "abc"), {}, 4, "ContextTokens", "not a number: 'abc'"),
    ("negative.csv", VIDUR_HEAD + "0,5,1\n1,-3,1\n", {}, 3, "num_prefill_tokens", "negative token count"),
    ("fraction.csv", VIDUR_HEAD + "0,5,1.5\n", {}, 2, "num_decode_tokens", "not a whole number"),
    ("blank-value.csv", VIDUR_HEAD + "0,5,1\n1,,1\n", {}, 3, "num_prefill_tokens", "not a number: ''"),
    ("nan-time.csv", VIDUR_HEAD + "0,5,1\nnan,5,1\n", {}, 3, "arrived_at", "not a finite number"),
    ("empty.csv", "", {}, 1, "header", "file is empty"),
    ("blank.csv", "\n\n", {}, 3, "header", "file is empty"),
    ("header-only.csv", VIDUR_HEAD, {}, 2, "arrived_at", "no data rows"),
    (
        "bad-time.csv",
        AZURE_2023.replace("2023-11-16 18:15:51.22", "2023-13-16 18:15:51.22"),
        {},
        4,
        "TIMESTAMP",
        "unreadable timestamp",
    ),
    (
        "blank-time.csv",
        AZURE_2023.replace("2023-11-16 18:15:51.3910170", ""),
        {},
        5,
        "TIMESTAMP",
        "unreadable timestamp",
    ),
    (
        "mixed-tz.csv",
        "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00+00:00,1,1\n"
        "2024-05-10 00:00:01,1,1\n2024-05-10 00:00:02+00:00,1,1\n",
        {},
        3,
        "TIMESTAMP",
        "time-zone offset",
    ),
    ("short-row.csv", VIDUR_HEAD + "0,5,1\n1,5\n", {}, 3, "num_decode_tokens", "missing value"),
    ("long-row.csv", VIDUR_HEAD + "0,5,1\n1,5,1,9\n", {}, 3, "after num_decode_tokens", "extra value '9'"),
    (
        "bad.jsonl",
        MOONCAKE.replace('"output_length": 12,', '"output_length": 12'),
        {},
        2,
        "json",
        "not valid JSON",
    ),
    (
        "missing-key.jsonl",
        MOONCAKE.replace('"output_length": 7, ', ""),
        {},
        3,
        "output_length",
        "missing key",
    ),
    (
        "text-len.jsonl",
        MOONCAKE.replace('"input_length": 1024', '"input_length": "1024"'),
        {},
        2,
        "input_length",
        "not a number",
    ),
    (
        "negative.jsonl",
        MOONCAKE.replace('"input_length": 512', '"input_length": -512'),
        {},
        3,
        "input_length",
        "token count",
    ),
    ("array.jsonl", MOONCAKE + "[1, 2]\n", {}, 4, "json", "expected a JSON object"),
    (
        "hashes.jsonl",
        MOONCAKE.replace('"hash_ids": []', '"hash_ids": "x"'),
        {},
        3,
        "hash_ids",
        "list of integers",
    ),
    ("all-failed.csv", VIDUR_HEAD + "0,5,0\n1,5,0\n", {}, None, "num_decode_tokens", "no requests left"),
    ("filter.csv", BURSTGPT_V1, {"model": "Claude"}, None, "Model", "values present: ChatGPT, GPT-4"),
    ("filter.csv", BURSTGPT_V1, {"log_type": "batch"}, None, "Log Type", "values present"),
]


def check(err: InputError, path, line, field, words) -> None:
    msg = str(err)
    assert "\n" not in msg
    where = re.escape(str(path)) + (f":{line}" if line is not None else "")
    assert re.match(rf"{where}: field '{re.escape(field)}': ", msg), msg
    assert words in msg, msg


@pytest.mark.parametrize(
    ("name", "text", "kwargs", "line", "field", "words"),
    CASES,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)],
)
def test_bad_input_names_file_line_column(write, name, text, kwargs, line, field, words):
    path = write(name, text)
    with pytest.raises(InputError) as info:
        traces.load(path, **kwargs)
    check(info.value, path, line, field, words)


def test_json_error_names_the_character_column(write):
    path = write("m.jsonl", '{"timestamp": 0, "input_length": 1 "output_length": 2}\n')
    with pytest.raises(InputError, match=r"m\.jsonl:1: field 'json': not valid JSON .* at column 36\)"):
        traces.load(path)


def test_corrupt_gzip_and_binary_files(write):
    data = gzip.compress(AZURE_2023.encode() * 50, mtime=0)
    path = write("cut.csv.gz", data[: len(data) // 2])
    with pytest.raises(InputError, match=r"cut\.csv\.gz:\d+: .*cannot read"):
        traces.load(path)
    path = write("bin.csv", b"TIMESTAMP,ContextTokens,GeneratedTokens\n\xff\xfe\x00garbage\n")
    with pytest.raises(InputError, match=r"bin\.csv:2: not UTF-8 text \(byte 1 of the line: b'\\xff'\)"):
        traces.load(path)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match=r"nope\.csv: field 'trace': no such file$"):
        traces.load(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="built-in traces: azure2023-conv"):
        traces.load("azure2023-chat")
    with pytest.raises(InputError, match="is a directory"):
        traces.load(tmp_path)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"format": "sharegpt"}, "field 'format': unknown format 'sharegpt'"),
        ({"format": "csv"}, "field 'columns': format 'csv' needs a column mapping"),
        (
            {"columns": {"arrival": "a", "input": "b"}},
            "field 'columns': the column mapping needs output=NAME",
        ),
        ({"columns": {"arrival": "a", "input": "b", "output": "c", "unit": "s"}}, "unknown key 'unit'"),
        ({"columns": {"arrival": "a", "input": "b", "output": "c", "time_unit": "min"}}, "unknown time_unit"),
    ],
)
def test_bad_options(write, kwargs, words):
    with pytest.raises(InputError, match=re.escape(words)):
        traces.load(write("v.csv", VIDUR_HEAD + "0,1,1\n"), **kwargs)


def test_format_content_mismatch(write):
    with pytest.raises(InputError, match=r"m\.csv:1: field 'header': format 'azure' expects a CSV header"):
        traces.load(write("m.csv", MOONCAKE), format="azure")
    with pytest.raises(InputError, match=r"a\.jsonl:1: field 'header': format 'mooncake' expects JSON lines"):
        traces.load(write("a.jsonl", AZURE_2023), format="mooncake")
    with pytest.raises(InputError, match=r"a\.csv:1: field 'header': not a Parquet file"):
        traces.load(write("a.csv", AZURE_2023), format="parquet")
