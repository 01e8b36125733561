# FaaS emulator (agent/testbed_services/faas, workloads/faas, docs/faas.md). Nothing to build:
# `make bench` runs bench/faas_overhead.py; `make faas-serve` runs an emulator in the foreground.
FAAS_PROFILE ?= aws-lambda
FAAS_PORT    ?= 8650

BENCH_SCRIPTS += bench/faas_overhead.py bench/faas_tier_fidelity.py

.PHONY: faas-serve faas-smoke

faas-serve: $(STAMP) ## run the FaaS emulator on 127.0.0.1:FAAS_PORT (FAAS_PROFILE=aws-lambda; needs root for limits)
	@source $(VENV)/bin/activate && testbed-agent faas serve --profile $(FAAS_PROFILE) --port $(FAAS_PORT) \
	  --state-dir .scratch/faas-state

faas-smoke: $(STAMP) ## run workloads/plans/faas-smoke.yml (every FaaS experiment at toy sizes) into results/faas-smoke
	@source $(VENV)/bin/activate && testbed-agent run workloads/plans/faas-smoke.yml --out results/faas-smoke \
	  --node-exporter '' --no-progress
