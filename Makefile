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
# Fragments under mk/ add to these (one file per part of the toolkit).
BUILD_TARGETS :=
TEST_PREREQS  :=
BENCH_SCRIPTS := bench/agent_overhead.py
# make test leaves out the study reruns (pytest -m study, ~12 min): make test-studies runs them
PYTEST_ARGS   ?= -m "not study"

-include mk/*.mk

.PHONY: help install install-run run test test-studies bench lint build build-plan clean
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

# Everything (`make test`, the labs, the Azure roles): scripts/apt-packages.txt and requirements.txt.
$(STAMP): requirements.txt agent/pyproject.toml reports/pyproject.toml scripts/apt-packages.txt scripts/install.sh
	scripts/install.sh $(VENV) all
	@touch $@ $(RUN_STAMP)

# What `make run` needs: the first section of apt-packages.txt, requirements-run.txt at the pins.
$(RUN_STAMP): requirements.txt requirements-run.txt agent/pyproject.toml reports/pyproject.toml scripts/apt-packages.txt scripts/install.sh
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

test: ## install and build everything, then run the whole test suite
	@$(STEP) install --estimate 600 -- $(MAKE) --no-print-directory $(STAMP)
	@$(STEP) build --estimate 300 -- $(MAKE) --no-print-directory build $(TEST_PREREQS)
	@source $(VENV)/bin/activate && python -m pytest $(PYTEST_ARGS)

test-studies: ## the published studies' plans, small, through Ansible (~12 min)
	@$(MAKE) --no-print-directory test PYTEST_ARGS="-m study"

bench: ## benchmarks of the toolkit itself: ratios with intervals and decisions
	@$(STEP) --reset
	@$(STEP) install --estimate 600 -- $(MAKE) --no-print-directory $(STAMP)
	@$(STEP) build --estimate 300 -- $(MAKE) --no-print-directory build
	@source $(VENV)/bin/activate && for s in $(BENCH_SCRIPTS); do \
	  $(STEP) $$(basename $$s .py) --estimate 120 -- python $$s || exit 1; done
	@echo; echo "make bench: $$($(STEP) --summary install build $(foreach s,$(BENCH_SCRIPTS),$(basename $(notdir $(s)))))"

lint: $(STAMP) ## ruff and ansible-lint (production profile)
	@source $(VENV)/bin/activate && $(STEP) ruff-check --estimate 10 -- ruff check . \
	  && $(STEP) ruff-format --estimate 5 -- ruff format --check . \
	  && $(STEP) ansible-lint --estimate 150 -- ansible-lint --profile production

clean: ## remove results, reports and build output (keeps the venv)
	rm -rf results reports/out .scratch
