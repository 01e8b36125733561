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
# One cargo target directory for the two Rust programs: what they share (ring and the crates under
# it, built alike: kms/rust/Cargo.toml's profile overrides) is compiled once; each binary is copied
# where the agent and the bundle look for it (<program>/target/release/). Cargo locks the directory,
# so the two builds take turns (on 2 cores each keeps both busy anyway). It lives in the machine's
# cache (TESTBED_CACHE), not the checkout: a fresh clone rebuilds only the two programs' own crates
# (9 and 11 s here) instead of everything (8 min in make test's parallel build; cargo fingerprints
# every crate, so a change of version or flags builds anew).
CARGO_TARGET     := $(TESTBED_CACHE)/cargo-target
CARGO_BUILD       = RUSTC_VERSION_TEXT="$$(rustc --version)" CARGO_TARGET_DIR=$(CARGO_TARGET) \
                    cargo build -q --release --locked -j $(CRYPTO_JOBS)
# Maven's local repository (~/.m2, one per user, shared by every checkout) is not safe for two
# builds at once (make -j, or two checkouts' make test): they take turns on a lock in the machine's
# cache. The Rust builds take turns on one too: cargo locks its target directory only while it
# builds, and the copy out of it must see the binary of this checkout's build, not of another's.
CACHE_LOCK        = mkdir -p $(TESTBED_CACHE) && flock $(TESTBED_CACHE)/$(1).lock
MVN              := $(call CACHE_LOCK,maven) mvn
CARGO_LOCK       := $(call CACHE_LOCK,cargo)

CRYPTO_KMS            := $(CRYPTO)/kms
CRYPTO_KMS_GO_BIN     := $(CRYPTO_KMS)/go/bin/testbed-kms
CRYPTO_KMS_RUST_BIN   := $(CRYPTO_KMS)/rust/target/release/testbed-kms
CRYPTO_KMS_JAR        := $(CRYPTO_KMS)/java/target/testbed-kms.jar
CRYPTO_KMS_NODE_DEPS  := $(CRYPTO_KMS)/node/node_modules/.package-lock.json

BUILD_TARGETS += crypto crypto-kms
# the Rust key-service client (aws-sdk-kms, 6.6 min of CPU) is the longest build of make test: first
LONG_BUILDS   += $(CRYPTO_KMS_RUST_BIN) $(CRYPTO_RUST_BIN)
BENCH_SCRIPTS += bench/crypto_throughput.py

.PHONY: crypto crypto-kms crypto-clean crypto-vectors crypto-go crypto-rust crypto-java crypto-node \
        crypto-kms-go crypto-kms-rust crypto-kms-java crypto-kms-node

# One target per language, so `make build-plan` (make run) builds only the languages its plan runs
# (scripts/plan-builds.py); `make build` (make test, make bench) builds them all.
crypto-go: $(CRYPTO_GO_BIN)
crypto-rust: $(CRYPTO_RUST_BIN)
crypto-java: $(CRYPTO_JAR)
crypto-node: $(CRYPTO_NODE_DEPS)
crypto-kms-go: $(CRYPTO_KMS_GO_BIN)
crypto-kms-rust: $(CRYPTO_KMS_RUST_BIN)
crypto-kms-java: $(CRYPTO_KMS_JAR)
crypto-kms-node: $(CRYPTO_KMS_NODE_DEPS)

crypto: $(CRYPTO_GO_BIN) $(CRYPTO_RUST_BIN) $(CRYPTO_JAR) $(CRYPTO_NODE_DEPS) ## build the crypto programs (Go, Rust, Java, Node)

$(CRYPTO_GO_BIN): $(wildcard $(CRYPTO)/go/*.go) $(CRYPTO)/go/go.mod $(CRYPTO)/go/go.sum
	@if ! command -v go >/dev/null 2>&1; then \
	  echo "crypto: go toolchain not found - Go cells will be recorded as skipped"; \
	else echo "crypto: go build"; \
	  (cd $(CRYPTO)/go && go build -trimpath -o bin/testbed-crypto .) \
	  || echo "crypto: WARNING go build failed - Go cells will be recorded as skipped"; fi; $(TOOK)

$(CRYPTO_RUST_BIN): $(wildcard $(CRYPTO)/rust/src/*.rs) $(CRYPTO)/rust/Cargo.toml $(CRYPTO)/rust/Cargo.lock
	@if ! command -v cargo >/dev/null 2>&1; then \
	  echo "crypto: cargo not found - Rust cells will be recorded as skipped"; \
	else echo "crypto: cargo build --release"; \
	  (cd $(CRYPTO)/rust && $(CARGO_LOCK) bash -c '$(CARGO_BUILD) \
	    && install -D -m 0755 $(CARGO_TARGET)/release/testbed-crypto target/release/testbed-crypto') \
	  || echo "crypto: WARNING cargo build failed - Rust cells will be recorded as skipped"; fi; $(TOOK)

$(CRYPTO_JAR): $(wildcard $(CRYPTO)/java/src/main/java/testbed/crypto/*.java) $(CRYPTO)/java/pom.xml
	@if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then \
	  echo "crypto: JDK or Maven not found - Java cells will be recorded as skipped"; \
	else echo "crypto: mvn package"; \
	  (cd $(CRYPTO)/java && mkdir -p target && \
	    { $(MVN) -q -B package > target/mvn.log 2>&1 || { cat target/mvn.log; false; }; } && \
	    touch target/testbed-crypto.jar) \
	  || echo "crypto: WARNING mvn package failed - Java cells will be recorded as skipped"; fi; $(TOOK)

$(CRYPTO_NODE_DEPS): $(CRYPTO)/node/package.json $(CRYPTO)/node/package-lock.json
	@if ! command -v npm >/dev/null 2>&1; then \
	  echo "crypto: npm not found - Node cells will be recorded as skipped"; \
	else echo "crypto: npm ci"; \
	  (cd $(CRYPTO)/node && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.package-lock.json) \
	  || echo "crypto: WARNING npm ci failed - Node cells will be recorded as skipped"; fi; $(TOOK)

# Key-service clients (workloads/crypto/kms): each language's AWS SDK against an AWS-KMS-compatible
# endpoint (moto's server on loopback in the tests). Built only when their sources change; the Rust
# one (aws-sdk-kms over rustls with ring) takes minutes the first time and is cached after that.
crypto-kms: $(CRYPTO_KMS_GO_BIN) $(CRYPTO_KMS_RUST_BIN) $(CRYPTO_KMS_JAR) $(CRYPTO_KMS_NODE_DEPS) ## build the key-service clients (Go, Rust, Java, Node)

$(CRYPTO_KMS_GO_BIN): $(CRYPTO_KMS)/go/main.go $(CRYPTO_KMS)/go/go.mod $(CRYPTO_KMS)/go/go.sum
	@if ! command -v go >/dev/null 2>&1; then echo "crypto-kms: go not found - Go key-service cells skipped"; \
	else echo "crypto-kms: go build"; (cd $(CRYPTO_KMS)/go && go build -trimpath -o bin/testbed-kms .) \
	  || echo "crypto-kms: WARNING go build failed - Go key-service cells skipped"; fi; $(TOOK)

$(CRYPTO_KMS_RUST_BIN): $(CRYPTO_KMS)/rust/src/main.rs $(CRYPTO_KMS)/rust/Cargo.toml $(CRYPTO_KMS)/rust/Cargo.lock
	@if ! command -v cargo >/dev/null 2>&1; then echo "crypto-kms: cargo not found - Rust key-service cells skipped"; \
	else echo "crypto-kms: cargo build --release (aws-sdk-kms; minutes the first time)"; \
	  (cd $(CRYPTO_KMS)/rust && $(CARGO_LOCK) bash -c '$(CARGO_BUILD) \
	    && install -D -m 0755 $(CARGO_TARGET)/release/testbed-kms target/release/testbed-kms') \
	  || echo "crypto-kms: WARNING cargo build failed - Rust key-service cells skipped"; fi; $(TOOK)

$(CRYPTO_KMS_JAR): $(CRYPTO_KMS)/java/src/main/java/testbed/kms/Main.java $(CRYPTO_KMS)/java/pom.xml
	@if ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then \
	  echo "crypto-kms: JDK or Maven not found - Java key-service cells skipped"; \
	else echo "crypto-kms: mvn package"; \
	  (cd $(CRYPTO_KMS)/java && mkdir -p target && \
	    { $(MVN) -q -B package > target/mvn.log 2>&1 || { cat target/mvn.log; false; }; } && touch target/testbed-kms.jar) \
	  || echo "crypto-kms: WARNING mvn package failed - Java key-service cells skipped"; fi; $(TOOK)

$(CRYPTO_KMS_NODE_DEPS): $(CRYPTO_KMS)/node/package.json $(CRYPTO_KMS)/node/package-lock.json
	@if ! command -v npm >/dev/null 2>&1; then echo "crypto-kms: npm not found - Node key-service cells skipped"; \
	else echo "crypto-kms: npm ci"; \
	  (cd $(CRYPTO_KMS)/node && npm ci --no-audit --no-fund --loglevel=error && touch node_modules/.package-lock.json) \
	  || echo "crypto-kms: WARNING npm ci failed - Node key-service cells skipped"; fi; $(TOOK)

crypto-vectors: $(STAMP) ## regenerate workloads/crypto/vectors/vectors.json (keeps and verifies the published keys, signatures and wrapped keys: unchanged inputs change nothing)
	$(PY) $(CRYPTO)/vectors/generate.py

crypto-clean: ## remove the crypto build output
	rm -rf $(CRYPTO)/go/bin $(CRYPTO)/rust/target $(CRYPTO)/java/target $(CRYPTO)/node/node_modules $(CARGO_TARGET)
	rm -rf $(CRYPTO_KMS)/go/bin $(CRYPTO_KMS)/rust/target $(CRYPTO_KMS)/java/target $(CRYPTO_KMS)/node/node_modules
