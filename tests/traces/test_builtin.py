"""The shipped Azure 2023 traces: counts, labels, attribution, and lookup by name."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import traces


@pytest.mark.parametrize(
    ("name", "count", "domain"), [("azure2023-conv", 19_366, "chat"), ("azure2023-code", 8_819, "code")]
)
def test_shipped_trace_counts(name, count, domain):
    t = traces.builtin_trace(name)
    assert len(t) == count and t.meta["rows_read"] == count and t.meta["dropped_rows"] == 0
    assert t.meta["format"] == "azure" and t.meta["source"] == name
    assert set(t.domain.tolist()) == {domain}
    assert t.arrival_s[0] == 0 and np.all(np.diff(t.arrival_s) >= 0)
    assert 3400 < t.duration_s < 3600  # a one-hour sample
    by_name = traces.load(name)
    np.testing.assert_array_equal(by_name.arrival_s, t.arrival_s)


def test_known_statistics_of_the_conversation_trace():
    s = traces.describe(traces.load("azure2023-conv"))
    assert s["input_tokens_mean"] == pytest.approx(1154.7, abs=0.1)
    assert s["output_tokens_mean"] == pytest.approx(211.1, abs=0.1)
    assert s["interarrival_cv"] == pytest.approx(1.094, abs=0.001)
    assert s["input_tokens_p99"] == 4142.0
    json.dumps(s)  # JSON-ready


def test_files_and_attribution_ship_in_the_package():
    data = Path(traces.builtin_path("azure2023-conv")).parent
    assert (data / "azure2023_conv.csv.gz").is_file() and (data / "azure2023_code.csv.gz").is_file()
    readme = (data / "README.md").read_text(encoding="utf-8")
    for words in ("CC BY 4.0", "Splitwise", "ISCA 2024", "Azure/AzurePublicDataset"):
        assert words in readme
    assert traces.BUILTIN_TRACES == ("azure2023-conv", "azure2023-code")


def test_builtin_names_take_load_filters():
    with pytest.raises(traces.formats.InputError, match="no column mapping"):
        traces.load("azure2023-code", columns={"arrival": "x"})
    assert len(traces.load(" Azure2023-Code ")) == 8819
