# Data-science notebooks (issue 3): nothing to build; `make bench` measures SimplePrime's stability.
BENCH_SCRIPTS += bench/notebook_stability.py
