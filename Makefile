PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test golden readme-coverage bench bench-compare gpu-check clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -m pip install -q -e ".[test,nvrtc,scipy,dask]"
	touch $(STAMP)

demo: $(STAMP)
	$(VPY) examples/demo.py

test: $(STAMP)
	$(VPY) -m pytest -q -n 2 -p no:cacheprovider tests

golden: $(STAMP)
	$(VPY) -m s2sad.golden --write

# the README's list of what is covered, generated from the tables
readme-coverage: $(STAMP)
	$(VPY) -m s2sad coverage --write

bench: $(STAMP)
	$(VPY) -m pip install -q -e ".[bench,dask]" || echo "bench extras not all installed; comparing against what is there"
	$(VPY) bench/run.py

# the main table's s2sad rows of two revisions, interleaved in one session, with per-row
# ratios B/A and their spread (bench/compare_revs.py); B=. is this working tree
A ?= HEAD
B ?= .
bench-compare: $(STAMP)
	$(VPY) bench/compare_revs.py $(A) $(B) $(COMPARE_FLAGS)

gpu-check: $(STAMP)
	$(VPY) -m pip install -q -e ".[cuda]"
	$(VPY) -m pytest -q -m gpu tests
	$(VPY) bench/gpu.py

clean:
	rm -rf $(VENV) build *.egg-info
