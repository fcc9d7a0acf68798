# DataLoader Clinic. `make` lists what is here; the first target that needs
# Python creates .venv and installs requirements.txt into it.
# Bring your own environment instead with e.g. `make scenario-03 PYTHON=python3`.

VENV := .venv
PYTHON ?= $(VENV)/bin/python
TORCH_VERSION := $(shell sed -n 's/^torch==//p' requirements.txt)
# PyTorch's CPU-only wheels: a laptop downloads about 200 MB, where PyPI's torch for Linux is
# a CUDA build of several GB.  For a GPU build: make setup TORCH_INDEX=https://download.pytorch.org/whl/cu128
# (from any state: it replaces a CPU torch already in .venv), or a machine's own CUDA torch: PYTHON=python3.
# With TORCH_INDEX= (empty), torch comes from your default index (PyPI or a mirror).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
SCENARIO_DIRS := $(sort $(wildcard scenarios/[0-9][0-9]_*))
export PYTHONPATH := $(CURDIR)

ifeq ($(PYTHON),$(VENV)/bin/python)
SETUP := $(VENV)/.installed
else
SETUP :=
endif

.DEFAULT_GOAL := help
.PHONY: help setup lint test test-full suite-report notebooks figures gpu-check tables workshop workshop-status doctor explain bench clean clean-all list new

help:
	@echo "DataLoader Clinic: PyTorch DataLoader failures, reproduced and fixed"
	@echo ""
	@echo "  make scenario-NN   run scenario NN, broken then fixed, and print the verdict"
	@echo "  make diff-NN       show the fix: diff -u broken.py fixed.py"
	@echo "  make test          lint, then every scenario broken and fixed and each promise of the tools shown once"
	@echo "  make test-full     every test: the corpora, every attempt and probe, myths, measurements, walkthroughs run (CI)"
	@echo "  make suite-report  each tier's tests and seconds and the ten slowest, from the last run's junit file"
	@echo "  make lint          ruff, the pinned linter, over the code (rules: pyproject.toml)"
	@echo "  make notebooks     re-execute the walkthroughs in notebooks/ in place"
	@echo "  make figures       run every variant once; store each run (measured/cpu.json or gpu.json), rewrite what is rendered from them"
	@echo "                     and the notebooks; the Benchmarks block from the stored bench run"
	@echo "  make gpu-check     on a CUDA GPU, in 5 minutes: every variant of the GPU scenarios and their tests, into one archive"
	@echo "                     that make figures TAKE_IN=out/gpu-check/….tar.gz stores as their gpu runs"
	@echo "  make tables        rewrite the READMEs' Measured blocks and the front page's and WORKSHOP.md's tables from the stored runs"
	@echo "                     and the stored runs, scenarios/NN_*/measured/*.json (runs nothing)"
	@echo "  make list          the scenarios, one line each"
	@echo "  make new NN=34 SLUG=name   write a new scenario's skeleton (every file it adds; nothing else to edit)"
	@echo "  make workshop      every scenario in order, then a summary table (demo mode)"
	@echo "  make practice-NN   exercise NN: copy broken.py to workshop/ (never over your attempt)"
	@echo "  make check-NN      grade your workshop/NN_*.py (FILE=path to grade another file)"
	@echo "  make hint-NN       the next of three hints · make solution-NN SHOW=1: our fix as a diff"
	@echo "  make workshop-status   every exercise: not started / not yet / passed"
	@echo "  make workshop-status ROOM=dir   the whole room, from each attendee's state in dir (NAME.json)"
	@echo "  make doctor        what this machine can and cannot reproduce"
	@echo "  make doctor LOADER=train.py:make_loader   examine your own DataLoader (the function returns it)"
	@echo "  make doctor RUN=\"python train.py\"   run your own command (torchrun, accelerate launch…) for SECONDS=60,"
	@echo "                     watched inside every process, then stopped: what its loaders, workers and ranks did"
	@echo "  make doctor PID=N  watch a training job running now, stuck or swelling, without stopping it"
	@echo "  make doctor ORPHANS=1   DataLoader workers a killed job left behind (KILL=1 also ends them)"
	@echo "  make explain LOG=train.log   each DataLoader failure in a log or traceback: its scenario and fix (no LOG: paste, then Ctrl-D)"
	@echo "  make bench         our fixes against what users pick instead (exit 1: a goal not met)"
	@echo "  make setup         create $(VENV) with the pinned requirements (automatic; CPU torch from TORCH_INDEX)"
	@echo "  make clean         remove caches; 'make clean-all' also removes $(VENV)"
	@echo ""
	@echo "Exit status: each command's own (0 as it should be, 1 not, 2 bad input, 3 cannot run here) is the N of"
	@echo "make's last line 'Error N'; make itself exits 2 for any status but 0. Scripts that need the status run"
	@echo "the command itself: python -m scenarios -h lists them."
	@echo ""
	@echo "Scenarios:"
	@for d in $(SCENARIO_DIRS); do \
	  printf "  %s  %s\n" "$$(basename $$d | cut -c1-2)" "$$(sed -n 's/^title = "\(.*\)"/\1/p' $$d/scenario.toml | sed 's/\\"/"/g')"; \
	done

# A torch build other than .venv's (`make setup TORCH_INDEX=…/cu128` after any target set up the CPU
# one) replaces it: the build is torch's local version label (2.13.0+cpu, +cu128), the index's last
# part (cpu, cu128, rocm6.4) names the one asked for, and is installed by that label whatever else pip finds.  With PYTHON given, setup installs nothing: that Python is used as it is.
setup: $(SETUP)
ifeq ($(SETUP),)
	@echo "PYTHON=$(PYTHON) is used as it is: setup installs nothing into it"
else
	@have=$$($(PYTHON) -c "from importlib.metadata import version; print(version('torch').partition('+')[2])"); \
	want=$$(echo "$(notdir $(TORCH_INDEX))" | grep -xE 'cpu|cu[0-9]+|rocm[0-9.]+|xpu'); \
	if [ "$$have" != "$$want" ]; then \
	  echo "replacing torch $(TORCH_VERSION)$${have:++$$have} in $(VENV) with torch $(TORCH_VERSION)$${want:++$$want}"; \
	  $(PYTHON) -m pip uninstall --quiet -y torch; \
	  if ! $(PYTHON) -m pip install --quiet $(if $(TORCH_INDEX),--index-url "$(TORCH_INDEX)") "torch==$(TORCH_VERSION)$${want:++$$want}"; then \
	    echo "error: torch $(TORCH_VERSION)$${want:++$$want} could not be installed from $(or $(TORCH_INDEX),the default index);" \
	      "putting torch $(TORCH_VERSION)$${have:++$$have} back. Pick the index of a CUDA your driver supports (nvidia-smi" \
	      "shows it; https://download.pytorch.org/whl/cu126, cu128, cu130), or use the machine's own Python:" \
	      "make scenario-25 PYTHON=python3" >&2; \
	    $(PYTHON) -m pip install --quiet $${have:+--index-url https://download.pytorch.org/whl/$$have} "torch==$(TORCH_VERSION)$${have:++$$have}"; \
	    exit 2; \
	  fi; \
	  $(PYTHON) -m pip install --quiet -r requirements.txt; \
	fi
endif

$(VENV)/.installed: requirements.txt
	@command -v python3 >/dev/null || { echo "error: python3 not found; install Python 3.11+" >&2; exit 2; }
	python3 -m venv $(VENV)
	@# Torch first, from TORCH_INDEX when it answers; requirements.txt's torch==X then matches the
	@# X+cpu already installed and pulls nothing more.  Where the index cannot be reached (a closed
	@# network with its own mirror), torch comes from the default index instead.
	@if [ -n "$(TORCH_INDEX)" ] && timeout 20 $(VENV)/bin/python -c "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/torch/', timeout=10)" "$(TORCH_INDEX)" 2>/dev/null; then \
	  echo "installing torch $(TORCH_VERSION) from $(TORCH_INDEX)"; \
	  $(VENV)/bin/pip install --quiet --index-url "$(TORCH_INDEX)" "torch==$(TORCH_VERSION)"; \
	elif [ -n "$(TORCH_INDEX)" ]; then \
	  echo "note: $(TORCH_INDEX) does not answer; torch comes from the default package index"; \
	fi
	$(VENV)/bin/pip install --quiet -r requirements.txt
	@# Lets `.venv/bin/python scenarios/NN_*/broken.py` import fixes/ and scenarios/ from anywhere.
	echo "$(CURDIR)" > "$$($(VENV)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/dataloader_clinic.pth"
	touch $@

scenario-%: $(SETUP)
	@$(PYTHON) -m scenarios run $*

diff-%:
	@dir=$$(ls -d scenarios/$*_* 2>/dev/null | head -n 1); \
	if [ -z "$$dir" ]; then \
	  echo "error: no scenario '$*'; available: $$(ls -d scenarios/[0-9][0-9]_* | xargs -n1 basename | cut -c1-2 | tr '\n' ' ')" >&2; exit 2; \
	fi; \
	diff -u $$dir/broken.py $$dir/fixed.py; test $$? -le 1

list: $(SETUP)
	@$(PYTHON) -m scenarios list

# The skeleton of a new scenario, every file of it NOT YET WRITTEN until written (make test says which).
new: $(SETUP)
	@$(PYTHON) -m scenarios new "$(NN)" "$(SLUG)"

# Four pytest workers on two cores: a scenario's script often waits (a hang, a timeout, simulated
# storage, a launcher starting ranks), and the others keep both cores busy meanwhile (beside a busy
# core, 390 s with four, 412 s with three, 478 s with two).  All tests of one scenario share a worker
# (conftest.py).  The full tier keeps two: its measurements and myths time what they compare, and
# more workers beside them only add noise.
TEST_WORKERS ?= 4
FULL_WORKERS ?= 2

# The linter first, in seconds: the suite's minutes are not spent on code that does not lint.
lint: $(SETUP)
	$(PYTHON) -m ruff check .

# Two tiers (tests/conftest.py): `make test` deselects the tests marked `full`; `make test-full`
# runs every test, the myths, measurements, corpora, every attempt and probe and the executed
# walkthroughs too, and is what CI runs.  Each writes its tests' durations to out/suite/ (junit).
test: $(SETUP) lint
	$(PYTHON) -m pytest -n $(TEST_WORKERS) --dist loadgroup --junitxml=out/suite/test.xml

test-full: $(SETUP) lint
	$(PYTHON) -m pytest -n $(FULL_WORKERS) --dist loadgroup --full --junitxml=out/suite/full.xml

# Each tier's tests and seconds and the ten slowest, from the newest run in out/suite/ (else the
# stored one in tests/suite_runs/); RUN=path reads another.
suite-report:
	@python3 tests/suite_report.py $(RUN) $(if $(STORE),--store)

notebooks: $(SETUP)
	$(PYTHON) -m jupyter execute --inplace --timeout=600 notebooks/*.ipynb

# One run of every variant, stored as data (measured/<kind>.json), feeds the READMEs' Measured blocks, the tables and the notebooks; the top README's
# Benchmarks block comes from the stored bench run (no benchmark runs here).
# TAKE_IN=ARCHIVE (what `make gpu-check` leaves): store its runs as the gpu ones, run nothing, and
# re-execute the GPU walkthroughs, which show the stored run where no card is.
GPU_NOTEBOOKS = $(patsubst scenarios/%/scenario.toml,notebooks/%.ipynb,$(shell grep -l '"cuda"' scenarios/[0-9][0-9]_*/scenario.toml))
figures: $(SETUP)
	@if [ -n "$(TAKE_IN)" ]; then \
	  $(PYTHON) -m scenarios figures --take-in "$(TAKE_IN)" && \
	  $(PYTHON) -m jupyter execute --inplace --timeout=600 $(GPU_NOTEBOOKS); \
	else \
	  results=$$(mktemp -d); trap 'rm -rf "$$results"' EXIT; \
	  CLINIC_RESULTS_DIR=$$results $(PYTHON) -m scenarios figures all && \
	  $(PYTHON) -m scenarios bench --figures && \
	  CLINIC_RESULTS_DIR=$$results $(PYTHON) -m jupyter execute --inplace --timeout=600 notebooks/*.ipynb; \
	fi

# On a machine with a CUDA GPU: every variant of the GPU scenarios, their tests and the doctor's CUDA
# cases within 5 minutes, into one archive in out/gpu-check/ (exit 3 where there is no card).
gpu-check: $(SETUP)
	@$(PYTHON) -m scenarios gpu-check

workshop: $(SETUP)
	@$(PYTHON) -m scenarios run all

# Graded exercises (scenarios/clinic/workshop/; facilitator's guide: scenarios/WORKSHOP.md).
practice-%: $(SETUP)
	@$(PYTHON) -m scenarios practice $*

check-%: $(SETUP)
	@$(PYTHON) -m scenarios check $* $(FILE)

hint-%: $(SETUP)
	@$(PYTHON) -m scenarios hint $*

solution-%: $(SETUP)
	@$(PYTHON) -m scenarios solution $* $(if $(SHOW),--yes)

workshop-status: $(SETUP)
	@$(PYTHON) -m scenarios workshop-status $(if $(ROOM),--room "$(ROOM)")

doctor: $(SETUP)
	@$(PYTHON) -m scenarios doctor $(LOADER) $(if $(PID),--pid $(PID)) $(if $(ORPHANS),--orphans) $(if $(KILL),--kill) \
	  $(if $(SECONDS),--seconds $(SECONDS)) $(if $(RUN),-- $(RUN))

explain: $(SETUP)
	@$(PYTHON) -m scenarios explain $(or $(LOG),-)

tables: $(SETUP)
	@$(PYTHON) -m scenarios tables

# Writes its results to a file of its own, out/bench/<UTC time>.json (git-ignored); the stored run
# (scenarios/clinic/bench/results.json) changes only when a maintainer copies one over it.
bench: $(SETUP)
	@$(PYTHON) -m scenarios bench

clean:
	rm -rf .pytest_cache $$(find . -name __pycache__ -not -path './$(VENV)/*')

clean-all: clean
	rm -rf $(VENV)
