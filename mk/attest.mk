# Attestation (issue 14): `testbed-agent attest verify`, evidence binding, `testbed-report audit`.
# swtpm, swtpm-tools and tpm2-tools come from scripts/apt-packages.txt (the binding tests run a
# real software TPM as the Azure vTPM). `make bench` measures verification and binding costs.
BENCH_SCRIPTS += bench/attest_overhead.py

.PHONY: attest-test
attest-test: $(STAMP) ## attestation tests only (verification, binding on swtpm, audit)
	$(PY) -m pytest shared/tests/test_attest_verify.py shared/tests/test_attest_chain.py shared/tests/test_attest_binding.py reports/tests/test_audit.py -q
