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
    from sim.deploy.keys import COST_KEYS, CostKeys

    missing = []
    for section in SimConfig.SECTIONS:
        cls = type(getattr(SimConfig(), section))
        doc = inspect.getdoc(cls) or ""
        priced = fields_of(CostKeys)  # [server]'s pricing fields are documented as [cost]'s keys
        names = [f.name for f in fields(cls) if not f.name.startswith("_") and f.name not in priced]
        missing += [f"{section}.{n}" for n in names if not re.search(rf"(?<!\w){n}(?!\w)", doc)]
    doc = inspect.getdoc(CostKeys) or ""
    missing += [f"cost.{n}" for n in COST_KEYS if not re.search(rf"(?<!\w){n}(?!\w)", doc)]
    assert missing == []


def fields_of(cls) -> set[str]:
    return {f.name for f in fields(cls)}


def test_docs_config_md_is_up_to_date():
    assert config_doc.OUT.read_text() == config_doc.render(), "regenerate: python -m sim.config_doc"
