# The README's two commands: `make run` and `make test`. Also `make bench` and `make lint`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV      := .venv
PY        := $(VENV)/bin/python
STAMP     := $(VENV)/.installed
RUN_STAMP := $(VENV)/.installed-run
PLAN      ?= workloads/plans/quick.yml
# One named step with progress (heartbeat + estimate while silent) and its duration kept for the
# summary line: scripts/step.py (standard library only, runs before the venv exists).
STEP      := python3 scripts/step.py
# Builds every checkout on this machine shares, keyed by what makes them (like Go's and cargo's own
# caches): the Rust programs' cargo target and the KVM guest images (mk/crypto.mk, mk/kvm.mk).
TESTBED_CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/testbed
# What make starts writes the .pyc of each module it imports, once, into the project's venvs and
# sources, also where the shell sets PYTHONDONTWRITEBYTECODE (CI, this project's machines): without
# them every process compiled again what it imported (the azure collection's module_utils took
# 13.5 s to import instead of 3.0 s, on every Azure task). Only what is imported is compiled: a
# clean clone's install no longer byte-compiles the venvs' 55,000 modules (about 110 s of its 3-4 min).
unexport PYTHONDONTWRITEBYTECODE
# Fragments under mk/ add to these (one file per part of the toolkit).
BUILD_TARGETS :=
# the longest builds, started first when make test/bench build in parallel
LONG_BUILDS   :=
TEST_PREREQS  :=
BENCH_SCRIPTS := bench/agent_overhead.py
# seconds each bench script takes at its defaults (the progress line's estimate; 2026-11-30 runs):
# the defaults keep `make bench` within 15 minutes
BENCH_ESTIMATES := agent_overhead=200 attest_overhead=15 crypto_throughput=300 faas_overhead=5 \
  faas_tier_fidelity=85 notebook_stability=75 report_scale=210
# make test leaves out the study reruns (pytest -m study, 35-40 min here): make test-studies runs them.
# -n 4 --dist loadscope: four lanes, the emulated guests, the Azure rehearsal and other runs, the unit
# tests, the rest (conftest.py). --durations=30: the costliest tests at the end of every run (CI keeps
# an eye on the total).
PYTEST_ARGS   ?= -m "not study" -n 4 --dist loadscope --durations=30
# make test and make bench fill the venv and build the workload programs in parallel: downloads
# (pip, Maven, npm, Go and Cargo crates) overlap the compiles; each part prints its own duration.
# No --output-sync: it would hold a part's lines until the part ends (no progress); every line
# says which part it comes from.
BUILD_JOBS    ?= 6
PARALLEL      := -j$(BUILD_JOBS)
# the end of a part's recipe (one shell, bash): how long it took
TOOK           = echo "   $@: $${SECONDS}s"

-include mk/*.mk

.PHONY: help install install-run run test test-studies bench lint build build-plan clean
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

# Everything (`make test`, the labs, the Azure roles): scripts/apt-packages.txt and requirements.txt.
$(STAMP): requirements.txt shared/pyproject.toml agent/pyproject.toml reports/pyproject.toml scripts/apt-packages.txt scripts/install.sh scripts/venv-install.sh
	@scripts/install.sh $(VENV) all && $(TOOK)
	@touch $@ $(RUN_STAMP)

# What `make run` needs: the first section of apt-packages.txt, requirements-run.txt at the pins.
$(RUN_STAMP): requirements.txt requirements-run.txt shared/pyproject.toml agent/pyproject.toml reports/pyproject.toml scripts/apt-packages.txt scripts/install.sh scripts/venv-install.sh
	@if [ -f $(STAMP) ] && [ -z "$$(find $^ -newer $(STAMP) 2>/dev/null)" ]; then \
	  echo ">> install: the full set is installed already"; else scripts/install.sh $(VENV) run; fi
	@touch $@

install: $(STAMP) ## system packages (apt) and the project venv (.venv): everything, for make test
install-run: $(RUN_STAMP) ## only what make run needs (the quick plan on this machine and the report)

build: $(STAMP) $(BUILD_TARGETS) ## build every workload program that needs compiling (make test, make bench)

build-plan: $(RUN_STAMP) ## build only what PLAN runs (default the quick plan): its crypto languages
	@targets=$$(source $(VENV)/bin/activate && python scripts/plan-builds.py $(PLAN)) || exit $$?; \
	  if [ -n "$$targets" ]; then echo ">> build for $(PLAN): $$targets"; \
	    $(MAKE) --no-print-directory $$targets; \
	  else echo ">> build: nothing to build for $(PLAN)"; fi

# Three timed steps (install, build, plan), each with progress; their durations at the end, then
# the report's path. QUICK_PAIRS=0 leaves out the quick run's comparison (agent vs bare fio).
run: ## the quick plan on localhost through Ansible, with a comparison; prints the timings and the report path
	@$(STEP) --reset
	@$(STEP) install --estimate 120 -- $(MAKE) --no-print-directory install-run
	@$(STEP) build --estimate 60 -- $(MAKE) --no-print-directory build-plan PLAN=$(PLAN)
	@$(STEP) plan --estimate 240 -- bash -c 'source $(VENV)/bin/activate && scripts/run-plan.sh $(PLAN)'
	@echo; echo "make run: $$($(STEP) --summary install build plan)"
	@cat .cache/last-report.txt

# Two timed steps before the tests: the Debian packages, then the venv and every build in parallel.
test: ## install and build everything, then run the whole test suite
	@$(STEP) --reset
	@$(STEP) install-apt --estimate 300 -- scripts/install.sh $(VENV) all apt
	@$(STEP) install-build --estimate 600 -- $(MAKE) --no-print-directory $(PARALLEL) $(LONG_BUILDS) $(STAMP) build $(TEST_PREREQS)
	@echo "make test: $$($(STEP) --summary install-apt install-build)"
	@source $(VENV)/bin/activate && python -m pytest $(PYTEST_ARGS)

test-studies: ## the published studies' plans, small, through Ansible (35-40 min)
	@$(MAKE) --no-print-directory test PYTEST_ARGS="-m study --durations=30"

bench: ## benchmarks of the toolkit itself: ratios with intervals and decisions
	@$(STEP) --reset
	@$(STEP) install-apt --estimate 300 -- scripts/install.sh $(VENV) all apt
	@$(STEP) install-build --estimate 600 -- $(MAKE) --no-print-directory $(PARALLEL) $(LONG_BUILDS) $(STAMP) build
	@source $(VENV)/bin/activate && for s in $(BENCH_SCRIPTS); do n=$$(basename $$s .py) e=120; \
	  for kv in $(BENCH_ESTIMATES); do [ "$${kv%%=*}" = "$$n" ] && e=$${kv#*=}; done; \
	  $(STEP) $$n --estimate $$e -- python $$s || exit 1; done
	@echo; echo "make bench: $$($(STEP) --summary install-apt install-build $(foreach s,$(BENCH_SCRIPTS),$(basename $(notdir $(s)))))"

lint: $(STAMP) ## ruff and ansible-lint (production profile)
	@source $(VENV)/bin/activate && $(STEP) ruff-check --estimate 10 -- ruff check . \
	  && $(STEP) ruff-format --estimate 5 -- ruff format --check . \
	  && $(STEP) ansible-lint --estimate 150 -- ansible-lint --profile production

clean: ## remove results, reports and build output (keeps the venv)
	rm -rf results reports/out .scratch
