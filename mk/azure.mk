# Azure confidential-VM matrix (roles/azure_vm, the README, "Running on Azure"). Real Azure runs need
# `make azure-deps` once (the azure collection's SDKs, which conflict with requirements.txt, in a
# venv of their own); `make test` installs them too, for the dress rehearsal against the local ARM
# (tests/azure/arm, docs/azure.md).
AZURE_VENV  := $(VENV)/azure
AZURE_STAMP := $(AZURE_VENV)/.installed
AZURE_INV   := -i inventory/azure.yml -i inventory/azure.constructed.yml
AZURE_LIMIT ?= sev,tdx
AZURE_PLAN  ?= workloads/plans/standard.txt

AZURE_REHEARSAL_LIMIT ?= sev,tdx
TEST_PREREQS += $(AZURE_STAMP)

.PHONY: azure-deps azure-run azure-teardown azure-reap azure-check azure-rehearsal

$(AZURE_STAMP): requirements-azure.txt scripts/venv-install.sh
	@echo ">> azure venv: requirements-azure.txt into $(AZURE_VENV)"; mkdir -p $(VENV) \
	  && scripts/venv-install.sh $(AZURE_VENV) --upgrade pip \
	  && scripts/venv-install.sh $(AZURE_VENV) -r requirements-azure.txt && $(TOOK)
	@touch $@

azure-deps: $(AZURE_STAMP) ## Azure SDKs for the azure collection (venv .venv/azure)

azure-check: $(STAMP) ## Azure dry run: show and record what `make azure-run` would create (no Azure contact)
	@source $(VENV)/bin/activate && ansible-playbook $(AZURE_INV) playbooks/provision_azure.yml \
	  -l $(AZURE_LIMIT) --check -e azure_vm_dry_run=true

azure-run: $(STAMP) $(AZURE_STAMP) ## the Azure matrix (AZURE_LIMIT=sev,tdx): create, benchmark, delete - teardown runs whatever happens
	@source $(VENV)/bin/activate; \
	  run_id=$${RUN_ID:-az$$(date -u +%Y%m%dT%H%M%SZ)}; \
	  trap "ansible-playbook $(AZURE_INV) playbooks/teardown_azure.yml -l $(AZURE_LIMIT) -e run_id=$$run_id" EXIT; \
	  ansible-playbook $(AZURE_INV) run.yml -l $(AZURE_LIMIT) -e plan=$(AZURE_PLAN) -e run_id=$$run_id

azure-teardown: $(STAMP) ## delete every Azure run this controller started (or RUN=id)
	@source $(VENV)/bin/activate && ansible-playbook $(AZURE_INV) playbooks/teardown_azure.yml \
	  $(if $(RUN),-e run_id=$(RUN))

azure-reap: $(STAMP) ## delete every testbed resource group past its deadline (any controller)
	@source $(VENV)/bin/activate && ansible-playbook $(AZURE_INV) playbooks/teardown_azure.yml \
	  -e azure_vm_teardown_expired=true

azure-rehearsal: $(STAMP) $(AZURE_STAMP) ## dress rehearsal: run.yml -l sev,tdx against the local ARM (AZURE_REHEARSAL_LIMIT= for the whole matrix)
	@source $(VENV)/bin/activate && python tests/azure/rehearsal.py --quiet \
	  $(if $(AZURE_REHEARSAL_LIMIT),--limit $(AZURE_REHEARSAL_LIMIT))
