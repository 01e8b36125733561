# The comparative report (reports/, docs/report.md): `testbed-report build` and `analyze`.
# `make test` runs its tests, including one in headless Chromium (Debian's chromium, listed in
# scripts/apt-packages.txt and installed by `make install`); `make bench` times collecting into the results store and building, 10^6 and 10^7 observations.
REPORT_OUT ?= reports/out

BENCH_SCRIPTS += bench/report_scale.py

.PHONY: report report-check

# COMPARE holds pairs A:B separated by ';' (labels may hold spaces: COMPARE='fio via agent:bare fio')
report: $(STAMP) ## build the report of RESULTS=results/<run_id> [...] (COMPARE='A:B;C:D' optional)
	@test -n "$(RESULTS)" || { echo "usage: make report RESULTS='results/<run_id> [...]' [COMPARE='A:B;C:D']"; exit 2; }
	@source $(VENV)/bin/activate && compare=() && IFS=';' read -ra pairs <<< '$(subst ','\'',$(COMPARE))' \
	  && for p in "$${pairs[@]}"; do [[ -z "$${p// }" ]] || compare+=(--compare "$$p"); done \
	  && testbed-report build $(RESULTS) \
	  --out $(REPORT_OUT)/$(notdir $(patsubst %/,%,$(firstword $(RESULTS)))) "$${compare[@]}"

report-check: $(STAMP) ## check that headless Chromium (for the report's browser test) is installed
	@command -v chromium >/dev/null || { echo "chromium is missing: run 'make install'"; exit 1; }
	@chromium --version
