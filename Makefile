# specbed: `make demo` and `make test` set up .venv on first use, then run.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test bench figures train lint venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/specbed demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -q -n 2

bench: $(STAMP)
	$(PY) -m bench

# Train the small target and drafters from offline data (≤ 30 min on 2 cores); the committed checkpoints in
# engine/checkpoints/ were made by this target, so tests and the demo need no training.
train: $(STAMP)
	$(PY) -m engine.lm.train --out engine/checkpoints

# Regenerate the paper's figures at full size (paper_figs/REPRODUCTION.md compares them with the paper).
figures: $(STAMP)
	for f in fig2_acceptance table1_tau fig7_pareto fig8_budget crossover vllm_adaptive; do \
		$(PY) -m paper_figs.$$f --out results/paper_figs/$$f || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
