"""Disaggregated candidates in `specbed search`: a space whose base config has `[[pool]]` tables.

Role: when a search space's `base` is a disaggregated config (`sim.disagg.config`: a prefill and a decode
`[[pool]]` and a `[handoff]`), its axes may also be pool and hand-off keys — `pool.prefill.replicas`,
`pool.decode.replicas`, `pool.decode.cost`, `handoff.link`, … (`--set` spelling of `specbed disagg`) —
and every candidate runs through `sim.disagg.simulate_disagg` instead of `sim.simulate`. `PoolModel` is
that space's cell model (resolve: base + overrides -> one JSON-able dict, the colocated sections plus
`pool` {prefill, decode} and `handoff`; a job runs in the one cell model,
`analysis.search.cellmodel.SearchModel`); `price` prices both pools;
`launch_files` writes the winner's two `vllm serve` lines as a stated template, and its TOML.

The analytical screen bounds both pools (`analysis.search.screen`; EP pools are not screened).

May import: the standard library, `specsched.io.errors`, `analysis.model`, `analysis.search.prices`,
`analysis.search.launch`, `sim` (lazily).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from analysis.model import SimModel, flatten, policy_label, set_text
from specsched.io.errors import InputError

SECTIONS = ("pool", "handoff")
ROLES = ("prefill", "decode")


def is_pool_space(base_path: Path | None) -> bool:
    """True when the space's base config has `[[pool]]` tables (a disaggregated deployment)."""
    if base_path is None:
        return False
    from sim.disagg.config import is_disaggregated

    return is_disaggregated(base_path)


def colocated(config: dict) -> dict:
    """The config without its pool and hand-off sections (what `sim.config` reads)."""
    return {k: v for k, v in config.items() if k not in SECTIONS}


class PoolModel(SimModel):
    """Cells of the disaggregated simulator: resolved configs carry `pool` and `handoff` sections."""

    name = "sim-disagg"

    def resolve(self, base_path: Path | None, base_table: dict | None, overrides: list) -> dict:
        from sim.config_io import config_to_dict
        from sim.disagg.config import load_disagg
        from sim.run import check_inputs

        items = [(k, v, (None, None)) for k, v in flatten(base_table or {}).items()] + list(overrides)
        origin = {key: where for key, _, where in items}
        try:
            cfg = load_disagg(base_path, [f"{k}={set_text(v)}" for k, v, _ in items])
            for pool in (cfg.prefill, cfg.decode):
                check_inputs(cfg.pool_config(pool))
        except InputError as err:
            file, line = origin.get(err.field or "", (err.file, err.line))
            message = err.message.removesuffix(" (in --set)")
            raise InputError(message, file=file or err.file, line=line, field=err.field) from None
        out = config_to_dict(cfg.base)
        out["pool"] = {r: dataclasses.asdict(getattr(cfg, r)) for r in ROLES}
        out["handoff"] = dataclasses.asdict(cfg.handoff)
        return json.loads(json.dumps(out))

    def label(self, config: dict) -> str:
        return policy_label(config)


def disagg_config(config: dict):
    """The `DisaggConfig` of a resolved pooled config dict."""
    from sim.config_io import load_config
    from sim.disagg.config import DisaggConfig, HandoffConfig, PoolConfig

    base = load_config(None, [f"{k}={set_text(v)}" for k, v in flatten(colocated(config)).items()])
    pools = {r: PoolConfig(**config["pool"][r]) for r in ROLES}
    return DisaggConfig(base, pools["prefill"], pools["decode"], HandoffConfig(**config["handoff"]))


def pool_dict(config: dict, role: str) -> dict:
    """The colocated config dict one pool's replicas run as."""
    from sim.config_io import config_to_dict

    cfg = disagg_config(config)
    return json.loads(json.dumps(config_to_dict(cfg.pool_config(getattr(cfg, role)))))


def price(config: dict, prices, gpus_map: dict[str, str]) -> tuple[str, int, float]:
    """(GPU kind(s), GPUs of both pools, USD per GPU-hour averaged over them) of a pooled config."""
    from analysis.search.prices import gpu_count, gpu_kind

    kinds, total, usd = [], 0, 0.0
    for role in ROLES:
        pool, sub = config["pool"][role], pool_dict(config, role)
        n = pool["replicas"] * pool["ep_gpus"] if pool.get("ep_gpus") else gpu_count(sub)
        kind = gpu_kind(sub, gpus_map)
        kinds.append(kind)
        total += n
        usd += n * prices.per_hour(kind)
    return "+".join(dict.fromkeys(kinds)), total, usd / total


def winner_toml(config: dict, header: str) -> str:
    """The winner as a pooled config: the colocated sections, [handoff] and two [[pool]]s (their keys that
    differ from the defaults)."""
    from analysis.search.launch import winner_toml as colocated_toml
    from sim.disagg.config import fleet_tables

    pools = [config["pool"][role] for role in ROLES]
    tables = fleet_tables(config["handoff"], pools, changed_only=True)
    return "\n".join([colocated_toml(colocated(config), header).rstrip("\n"), *tables]) + "\n"


def _one_replica(config: dict) -> dict:
    return {**config, "server": {**config["server"], "replicas": 1}}


KV_TRANSFER = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'


def launch_files(winner, name: str, options) -> dict[str, str]:
    """{file: text} for a pooled winner: a `vllm serve` template per pool and `winner.toml`."""
    from analysis.search.launch import vllm_command

    cfg = winner.cell.config
    pre, dec = (_one_replica(pool_dict(cfg, r)) for r in ROLES)
    pre_cmd = vllm_command({**pre, "drafter": {"name": "none"}, "policy": {"name": "ar"}}, options.model, {})
    dec_cmd = vllm_command(dec, options.model, options.draft_models)
    p, d = cfg["pool"]["prefill"], cfg["pool"]["decode"]
    text = [
        "#!/bin/sh",
        f"# specbed search winner (disaggregated): {name}",
        "# TEMPLATE, not a tested launch: specbed simulated the pools and the KV hand-off",
        f"# (link {cfg['handoff']['link']}, draft_kv = {cfg['handoff']['draft_kv']}). Assumed: one vLLM",
        "# instance per pool replica, each with a KV connector (NixlConnector here: use your cluster's),",
        "# behind a proxy that sends each request to a prefill instance, then to a decode instance",
        "# (vLLM's disaggregated-serving proxy example). Hosts, ports and the proxy are yours; the",
        "# prefill line has no drafter (draft_kv = transfer prices one there); ep_gpus is not mapped.",
        f"# prefill pool: {p['replicas']} replica(s), each:",
        f"{pre_cmd} --kv-transfer-config '{KV_TRANSFER}'",
        f"# decode pool: {d['replicas']} replica(s), each:",
        f"{dec_cmd} --kv-transfer-config '{KV_TRANSFER}'",
    ]
    files = {"vllm_serve.sh": "\n".join(text) + "\n"}
    files["winner.toml"] = winner_toml(
        cfg, f"specbed search winner: {name}\nrun it: specbed disagg winner.toml"
    )
    return files
