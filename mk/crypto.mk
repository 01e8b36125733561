# Crypto suite (workloads/crypto, docs/crypto.md): build the Go, Rust, Java and Node programs with
# the machine's toolchains. A missing toolchain (or a failed build) is reported and that language's
# cells are recorded as skipped at run time - never faked; tests/crypto fails loudly when a present
# toolchain's program is missing. Python needs no build (cryptography + oxifish in the venv).
CRYPTO           := workloads/crypto
CRYPTO_GO_BIN    := $(CRYPTO)/go/bin/testbed-crypto
CRYPTO_RUST_BIN  := $(CRYPTO)/rust/target/release/testbed-crypto
CRYPTO_JAR       := $(CRYPTO)/java/target/testbed-crypto.jar
CRYPTO_NODE_DEPS := $(CRYPTO)/node/node_modules/.package-lock.json
CRYPTO_JOBS      ?= 2

BUILD_TARGETS += crypto
BENCH_SCRIPTS += bench/crypto_throughput.py

.PHONY: crypto crypto-clean crypto-vectors

crypto: $(CRYPTO_GO_BIN) $(CRYPTO_RUST_BIN) $(CRYPTO_JAR) $(CRYPTO_NODE_DEPS) ## build the crypto programs (Go, Rust, Java, Node)

$(CRYPTO_GO_BIN): $(wildcard $(CRYPTO)/go/*.go) $(CRYPTO)/go/go.mod $(CRYPTO)/go/go.sum
	@if ! command -v go >/dev/null 2>&1; then \
	  echo "crypto: go toolchain not found - Go cells will be recorded as skipped"; \
	else echo "crypto: go build"; \
	  (cd $(CRYPTO)/go && go build -trimpath -o bin/testbed-crypto .) \
	  || echo "crypto: WARNING go build failed - Go cells will be recorded as skipped"; fi

$(CRYPTO_RUST_BIN): $(wildcard $(CRYPTO)/rust/src/*.rs) $(CRYPTO)/rust/Cargo.toml $(CRYPTO)/rust/Cargo.lock
	@if ! command -v cargo >/dev/null 2>&1; then \
	  echo "crypto: cargo not found - Rust cells will be recorded as skipped"; \
	else echo "crypto: cargo build --release"; \
	  (cd $(CRYPTO)/rust && RUSTC_VERSION_TEXT="$$(rustc --version)" \
	    cargo build -q --release --locked -j $(CRYPTO_JOBS) && touch target/release/testbed-crypto) \
	  || echo "crypto: WARNING cargo build failed - Rust cells will be recorded as skipped"; fi

$(CRYPTO_JAR): $(wildcard $(CRYPTO)/java/src/main/java/testbed/crypto/*.java) $(CRYPTO)/java/pom.xml
	@if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then \
	  echo "crypto: JDK or Maven not found - Java cells will be recorded as skipped"; \
	else echo "crypto: mvn package"; \
	  (cd $(CRYPTO)/java && mkdir -p target && \
	    { mvn -q -B package > target/mvn.log 2>&1 || { cat target/mvn.log; false; }; } && \
	    touch target/testbed-crypto.jar) \
	  || echo "crypto: WARNING mvn package failed - Java cells will be recorded as skipped"; fi

$(CRYPTO_NODE_DEPS): $(CRYPTO)/node/package.json $(CRYPTO)/node/package-lock.json
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "crypto: npm not found - Node cells will be recorded as skipped"; \
	else echo "crypto: npm ci"; \
	  (cd $(CRYPTO)/node && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.package-lock.json) \
	  || echo "crypto: WARNING npm ci failed - Node cells will be recorded as skipped"; fi

crypto-vectors: $(STAMP) ## regenerate workloads/crypto/vectors/vectors.json (keeps the ECDSA/RSA keys)
	$(PY) $(CRYPTO)/vectors/generate.py

crypto-clean: ## remove the crypto build output
	rm -rf $(CRYPTO)/go/bin $(CRYPTO)/rust/target $(CRYPTO)/java/target $(CRYPTO)/node/node_modules
