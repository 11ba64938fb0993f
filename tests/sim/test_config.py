"""Config loading: TOML and --set overrides with typed coercion, and one-line errors naming the key."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sim.config import SimConfig
from sim.config_io import config_to_json, config_to_toml, load_config
from sim.run import prepare
from specsched.io.errors import InputError

PUBLIC = {
    "seed": ("7", 7),
    "workload.kind": ("gamma", "gamma"),
    "workload.rate": ("8", 8.0),
    "workload.cv": ("2.5", 2.5),
    "workload.concurrency": ("64", 64),
    "workload.num_requests": ("+1000", 1000),
    "workload.input_tokens": ("512", 512),
    "workload.output_tokens": ("128", 128),
    "workload.domain": ("math", "math"),
    "workload.trace": ("azure2023-conv", "azure2023-conv"),
    "drafter.name": ("eagle3", "eagle3"),
    "drafter.gamma": ("5", 5),
    "policy.name": ("threshold", "threshold"),
    "policy.threshold": ("0.7", 0.7),
    "cost.table": ("h200-dense8b", "h200-dense8b"),
    "server.replicas": ("2", 2),
    "server.tp": ("4", 4),
    "server.max_num_seqs": ("128", 128),
}


def _get(cfg: SimConfig, dotted: str):
    if dotted.startswith("cost."):  # the [cost] section is a view of [server]'s pricing fields
        from sim.deploy.keys import COST_KEYS

        return getattr(cfg.server, COST_KEYS[dotted.removeprefix("cost.")])
    obj = cfg
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def test_defaults_are_valid_and_equal_the_dataclass_defaults():
    """Loading nothing gives SimConfig()."""
    assert load_config() == SimConfig()


@pytest.mark.parametrize("key", sorted(PUBLIC))
def test_every_public_key_works_with_set(key):
    """Each public key is settable and coerced to its type."""
    text, expected = PUBLIC[key]
    sets = [f"{key}={text}"]
    if key == "policy.threshold":
        sets.insert(0, "policy.name=threshold")
    cfg = load_config(None, sets)
    assert _get(cfg, key) == expected
    assert type(_get(cfg, key)) is type(expected)


def test_policy_parameters_k_and_delay():
    assert load_config(None, ["policy.name=fixed", "policy.k=3"]).policy.params() == {"k": 3}
    assert load_config(None, ["policy.name=dspark_global", "policy.delay=4"]).policy.params() == {"delay": 4}
    assert load_config(None, ["policy.name=fixed", "policy.k=none"]).policy.k is None


def test_a_parameter_the_policy_does_not_take_is_an_error():
    with pytest.raises(InputError, match=r"policy\.k"):
        load_config(None, ["policy.name=dspark", "policy.k=3"])


@pytest.mark.parametrize("text", ["0.2,0.4,0.4", "chat=0.2,math=0.4,code=0.4"])
def test_mix_from_text(text):
    assert load_config(None, [f"workload.mix={text}"]).workload.mix == (0.2, 0.4, 0.4)


def test_toml_file_with_tables_and_mix_table(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('seed = 3\n[workload]\nrate = 2\nmix = {math = 1.0}\n[policy]\nname = "fixed"\nk = 2\n')
    cfg = load_config(path)
    assert (cfg.seed, cfg.workload.rate, cfg.workload.mix, cfg.policy.k) == (3, 2.0, (0.0, 1.0, 0.0), 2)
    assert load_config(path, ["policy.k=5"]).policy.k == 5  # --set wins over the file


def test_toml_round_trip(tmp_path):
    cfg = load_config(
        None,
        [
            "seed=9",
            "workload.kind=closed",
            "workload.mix=1,2,3",
            "policy.name=fixed",
            "policy.k=4",
            "server.tp=2",
            "acceptance.sts=false",
            "metrics.warmup=0.2",
        ],
    )
    path = tmp_path / "config.toml"
    path.write_text(config_to_toml(cfg))
    assert load_config(path) == cfg
    assert '"seed": 9' in config_to_json(cfg)


def test_relative_paths_in_a_file_are_relative_to_the_file(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.csv").write_text("x")
    (tmp_path / "sub" / "c.toml").write_text('[workload]\nkind = "trace"\ntrace = "t.csv"\n')
    assert load_config(tmp_path / "sub" / "c.toml").workload.trace == str(tmp_path / "sub" / "t.csv")


@pytest.mark.parametrize(
    "item, field",
    [
        ("workload.rat=3", "workload.rat"),
        ("wrkload.rate=3", "wrkload.rate"),
        ("workload.rate=fast", "workload.rate"),
        ("workload.rate=-1", "workload.rate"),
        ("workload.num_requests=2.5", "workload.num_requests"),
        ("workload.num_requests=20.0", "workload.num_requests"),  # a count written as a float (issue 36)
        ("workload.num_requests=2e1", "workload.num_requests"),
        ("workload.kind=bursty", "workload.kind"),
        ("drafter.gamma=-1", "drafter.gamma"),
        ("drafter.name=medusa", "drafter.name"),
        ("policy.name=best", "policy.name"),
        ("acceptance.auc=1.5", "acceptance.auc"),
        ("metrics.warmup=1.2", "metrics.warmup"),
        ("server.replicas=0", "server.replicas"),
        ("seed=-3", "seed"),
        ("workload.mix=1,2", "workload.mix"),
    ],
)
def test_bad_set_names_the_key_in_one_line(item, field):
    with pytest.raises(InputError) as info:
        load_config(None, [item])
    assert f"'{field}'" in str(info.value)
    assert "\n" not in str(info.value)


def test_bad_toml_names_file_line_and_key(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('seed = 1\n\n[workload]\nkind = "poisson"\nrate = "fast"\n')
    with pytest.raises(InputError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}:5: field 'workload.rate'")
    path.write_text("[workload]\nrate = 2\n[drafter]\ngama = 3\n")
    with pytest.raises(InputError, match=r"bad\.toml:4: field 'drafter\.gama': unknown key"):
        load_config(path)
    path.write_text("[workload]\nrate = -2\n")
    with pytest.raises(InputError, match=r"bad\.toml:2: field 'workload\.rate'"):
        load_config(path)
    path.write_text("[workload\nrate = 2\n")
    with pytest.raises(InputError, match="not valid TOML"):
        load_config(path)
    with pytest.raises(InputError, match="cannot read config"):
        load_config(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    "sets, field",
    [
        (["cost.table=no-such-table"], "cost.table"),
        (["workload.kind=trace", "workload.trace=/nonexistent/trace.csv"], "trace"),
        (["server.kv_tokens=100"], "server.kv_tokens"),
        (["drafter.name=mtp"], "drafter.gamma"),
    ],
)
def test_bad_inputs_found_before_running(sets, field):
    with pytest.raises(InputError) as info:
        prepare(load_config(None, sets))
    assert field in str(info.value)


@given(rate=st.floats(1e-3, 1e6, allow_nan=False), gamma=st.integers(0, 7), seed=st.integers(0, 2**32))
def test_numbers_survive_text_and_toml(rate, gamma, seed):
    """--set text → config → TOML → config is the identity for numeric keys."""
    cfg = load_config(None, [f"workload.rate={rate!r}", f"drafter.gamma={gamma}", f"seed={seed}"])
    assert (cfg.workload.rate, cfg.drafter.gamma, cfg.seed) == (rate, gamma, seed)
    import tomllib

    assert tomllib.loads(config_to_toml(cfg))["workload"]["rate"] == rate
