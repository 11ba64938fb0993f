"""One GPU table, one link table, one model table, one `Knobs`, one `kv_token_seconds`: an AST scan of every
package fails when a second one appears (issue 31: two catalogues, three sets of knobs had drifted)."""

import ast
from pathlib import Path

import pytest

import specsched.price as P

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("specsched", "sim", "engine", "specbed", "analysis", "paper_figs", "traces", "twin", "bench",
            "validate", "bridge")  # fmt: skip


def _trees():
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")) if (ROOT / pkg).is_dir() else ():
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(encoding="utf-8"))


TREES = list(_trees())


def _classes_with_field(name: str) -> list[str]:
    """Classes (file:class) whose body annotates a field `name` (a dataclass row of that kind)."""
    out = []
    for file, tree in TREES:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and s.target.id == name
                for s in node.body
            ):
                out.append(f"{file}:{node.name}")
    return out


def _defs(name: str) -> list[str]:
    return [f"{file}:{node.lineno}" for file, tree in TREES for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef) and node.name == name]  # fmt: skip


def _tables(name: str) -> list[str]:
    """Module-level assignments to `name` (a table)."""
    out = []
    for file, tree in TREES:
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                out.append(file)
    return out


@pytest.mark.parametrize(
    "field, home",
    [
        ("hbm_bw", "specsched/price/gpus.py:GPU"),  # a GPU row
        ("active_params", "specsched/price/models.py:ModelShape"),  # a model row
        ("eta_bw", "specsched/price/knobs.py:Knobs"),  # a set of knobs
        ("decode_flops_per_pair", "specsched/price/models.py:Attention"),  # a model's attention facts
    ],
)
def test_one_row_class_of_each_kind(field, home):
    assert _classes_with_field(field) == [home]


@pytest.mark.parametrize(
    "name, home",
    [("GPUS", "specsched/price/gpus.py"), ("LINKS", "specsched/price/gpus.py"),
     ("ATTENTION", None)],
)  # fmt: skip
def test_one_table_of_each_kind(name, home):
    assert _tables(name) == ([home] if home else [])


def test_one_model_table():
    # sim/acceptance.py's MODELS names acceptance models, not model shapes
    assert [f for f in _tables("MODELS") if f != "sim/acceptance.py"] == ["specsched/price/models.py"]


@pytest.mark.parametrize(
    "name, home",
    [("get_gpu", "specsched/price/gpus.py"), ("get_link", "specsched/price/gpus.py"),
     ("get_model", "specsched/price/models.py"), ("find_model", "specsched/price/models.py"),
     ("kv_token_seconds", "specsched/price/roofline.py"), ("transferred_knobs", "specsched/price/knobs.py"),
     ("shipped_knobs", "specsched/price/knobs.py")],
)  # fmt: skip
def test_one_resolver_of_each_kind(name, home):
    assert [d.split(":")[0] for d in _defs(name)] == [home]


@pytest.mark.parametrize("name", ["GPU", "Link", "ModelShape", "Knobs", "Attention", "VllmSpec", "KVSizing"])
def test_one_class_of_each_name(name):
    homes = [f for f, tree in TREES for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == name]
    assert len(homes) <= 1 and all(h.startswith("specsched/price/") for h in homes), homes


def test_one_h100():
    # the roofline's GPU and the catalogue's are one object (they used to compare unequal)
    assert P.get_gpu("h100") is P.get_gpu("H100-SXM") is P.GPUS["h100"]
    assert P.get_gpu("h100").link_bw == P.LINKS[P.GPUS["h100"].link].bandwidth
    assert P.get_model("llama3-8b") is P.get_model("meta-llama/Llama-3.1-8B-Instruct")
    assert P.MODELS["deepseek-v3"].attention is not None


def test_every_gpu_names_a_link_and_a_source():
    for gpu in P.GPUS.values():
        assert gpu.link in P.LINKS and gpu.source and gpu.visible_memory > 0
