# tenancy-policies — build, test and try the Kubewarden policies of this bundle.
#
#   make run    build what is needed and evaluate the seed example through testdrive
#   make test   fmt, clippy, unit tests, all wasm built, every declarative case through the wasm

SHELL := /bin/bash
CARGO ?= cargo
WASM_TARGET := wasm32-wasip1
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
WASM_DIR := $(TARGET_DIR)/$(WASM_TARGET)/release
TESTDRIVE := $(TARGET_DIR)/host/testdrive
POLICIES := $(notdir $(wildcard policies/*-policy))
POLICY_PKGS := $(foreach p,$(POLICIES),-p $(p))
SEED_SETTINGS := test_data/settings/pod-toleration-seed.yaml
SEED_REQUESTS := test_data/requests/pod-toleration

.PHONY: run test setup fmt fmt-check lint unit policies testdrive check annotate bench e2e clean

run: setup policies testdrive
	@echo "== seed example: bob (not in tenantA-users) tolerates dedicated=tenantA =="
	$(TESTDRIVE) run $(WASM_DIR)/pod_toleration_policy.wasm \
	  --metadata policies/pod-toleration-policy/metadata.yml \
	  --settings-path $(SEED_SETTINGS) \
	  --request-path $(SEED_REQUESTS)/pod-equal-dedicated-bob.json
	@echo "== seed example: alice (in tenantA-users) tolerates dedicated=tenantA =="
	$(TESTDRIVE) run $(WASM_DIR)/pod_toleration_policy.wasm \
	  --metadata policies/pod-toleration-policy/metadata.yml \
	  --settings-path $(SEED_SETTINGS) \
	  --request-path $(SEED_REQUESTS)/pod-equal-dedicated-member.json

test: setup fmt-check lint unit policies testdrive check

setup:
	@rustup target list --installed | grep -qx $(WASM_TARGET) || rustup target add $(WASM_TARGET)
	@rustup component list --installed | grep -q '^clippy' || rustup component add clippy
	@rustup component list --installed | grep -q '^rustfmt' || rustup component add rustfmt

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

# Clippy natively (every target, tests included) and for wasm32-wasip1, so that code
# compiled only into the wasm modules (the host callbacks) is linted too. The workspace
# lints deny unwrap, expect, panic and unchecked indexing outside tests.
lint:
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy --target $(WASM_TARGET) -p policy-core $(POLICY_PKGS) -- -D warnings

unit:
	$(CARGO) test --profile host --workspace --no-fail-fast

policies:
	$(CARGO) build --release --target $(WASM_TARGET) $(POLICY_PKGS)

# Built with the whole workspace's targets so that shared dependencies (wasmtime among them)
# get the same features as in `make unit`: building testdrive alone would unify features
# differently and compile wasmtime a second time.
testdrive:
	$(CARGO) build --profile host --workspace --all-targets

# Every declarative case of every policy, through the built wasm. Its last line is
# "N passed, N failed".
check: policies testdrive
	$(TESTDRIVE) check --wasm-dir $(WASM_DIR)

e2e: check

# Annotated modules (what `kwctl annotate` produces), in target/annotated/.
annotate: policies testdrive
	@mkdir -p $(TARGET_DIR)/annotated
	@for p in $(POLICIES); do \
	  w=$$(echo $$p | tr - _); \
	  $(TESTDRIVE) annotate $(WASM_DIR)/$$w.wasm --metadata policies/$$p/metadata.yml \
	    --usage policies/$$p/README.md -o $(TARGET_DIR)/annotated/$$p.wasm || exit 1; \
	  echo "$(TARGET_DIR)/annotated/$$p.wasm"; \
	done

# Per policy: wasm size, µs/request with a fresh instance (as policy-server) and with a
# reused one (as kwctl bench); then the same inputs through the core natively, for the
# policies that have examples/native_bench.rs.
bench: policies testdrive
	$(TESTDRIVE) bench --wasm-dir $(WASM_DIR)
	@$(TESTDRIVE) bench --emit-payloads $(TARGET_DIR)/bench-inputs > /dev/null
	@for p in $(POLICIES); do \
	  if [ -f policies/$$p/examples/native_bench.rs ] && [ -f $(TARGET_DIR)/bench-inputs/$$p.json ]; then \
	    $(CARGO) run -q --profile host -p $$p --example $$p-native-bench -- $(TARGET_DIR)/bench-inputs/$$p.json || exit 1; \
	  fi; \
	done

clean:
	$(CARGO) clean
