# The README's two commands: `make run` and `make test`. Also `make bench` and `make lint`.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PLAN  ?= workloads/plans/quick.yml
# Fragments under mk/ add to these (one file per part of the toolkit).
BUILD_TARGETS :=
TEST_PREREQS  :=
BENCH_SCRIPTS := bench/agent_overhead.py
# make test leaves out the study reruns (pytest -m study, ~12 min): make test-studies runs them
PYTEST_ARGS   ?= -m "not study"

-include mk/*.mk

.PHONY: help install run test test-studies bench lint build clean
help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | sort

$(STAMP): requirements.txt agent/pyproject.toml reports/pyproject.toml scripts/apt-packages.txt scripts/install.sh
	scripts/install.sh $(VENV)
	@touch $@

install: $(STAMP) ## system packages (apt) and the project venv (.venv)

build: $(STAMP) $(BUILD_TARGETS) ## build workloads that need compiling

run: $(STAMP) build ## run the quick plan on localhost through Ansible; prints the report path
	@source $(VENV)/bin/activate && scripts/run-plan.sh $(PLAN)

test: $(STAMP) build $(TEST_PREREQS) ## run the whole test suite
	@source $(VENV)/bin/activate && python -m pytest $(PYTEST_ARGS)

test-studies: ## the published studies' plans, small, through Ansible (~12 min)
	@$(MAKE) --no-print-directory test PYTEST_ARGS="-m study"

bench: $(STAMP) build ## benchmarks of the toolkit itself: ratios measured side by side
	@source $(VENV)/bin/activate && for s in $(BENCH_SCRIPTS); do python $$s || exit 1; done

lint: $(STAMP) ## ruff and ansible-lint (production profile)
	@source $(VENV)/bin/activate && ruff check . && ruff format --check . && ansible-lint --profile production

clean: ## remove results, reports and build output (keeps the venv)
	rm -rf results reports/out .scratch
