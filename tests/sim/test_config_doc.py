"""docs/config.md is generated from the config dataclasses (`python -m sim.config_doc`): every key is in it,
every key is documented in its section's docstring, and the file is up to date."""

import inspect
import re
from dataclasses import fields

from sim import config_doc
from sim.config import SimConfig


def test_every_config_key_is_in_docs_config_md():
    text = config_doc.OUT.read_text()
    keys = config_doc.keys()
    assert len(keys) >= 60
    assert [k for k in keys if f"| `{k}` |" not in text] == []


def test_every_config_key_is_documented_in_its_section():
    missing = []
    for section in SimConfig.SECTIONS:
        cls = type(getattr(SimConfig(), section))
        doc = inspect.getdoc(cls) or ""
        names = [f.name for f in fields(cls) if not f.name.startswith("_")]
        missing += [f"{section}.{n}" for n in names if not re.search(rf"(?<!\w){n}(?!\w)", doc)]
    assert missing == []


def test_docs_config_md_is_up_to_date():
    assert config_doc.OUT.read_text() == config_doc.render(), "regenerate: python -m sim.config_doc"
