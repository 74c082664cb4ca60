# tenancy-policies — build, test and try the Kubewarden policies of this bundle.
#
#   make run    build what is needed, evaluate the seed example through testdrive, then convert the
#               seed's Capsule solar Tenant and show Alice's requests through its bindings
#   make test   fmt, clippy, all wasm built, unit tests, every declarative case through the wasm,
#               then through the real kwctl (make e2e) when kwctl is found
#   make e2e    every declarative case through the real kwctl ($(KWCTL), else kwctl on PATH), and
#               every audit file through the real policy-server's /audit/<id>
#   make bench-server  throughput of the bench scenarios in the real policy-server (not in make test)
#   make install-e2e deploy/ as Kubewarden runs it (part of make e2e): the controller's policies.yml
#               in the real policy-server, RBAC enforced, a case per context-aware policy and every
#               Capsule scenario routed as the API server routes them
#   make install-footprint policy-server's start time and memory for deploy/ plus 0, 100 and 1,000
#               tenants (not in make test)
#   make publish-local the release rehearsed against a local OCI registry (part of make e2e): every
#               annotated module pushed by .github/scripts/release.sh, pulled and run by the real
#               policy-server, the Artifact Hub branch pushed concurrently, the README install commands
#   make deploy write the install directory deploy/ (capsule-bindings install); a test checks it
#   make ceiling-check the baseline tenant ceiling beside Kubernetes' own edit and admin (part of
#               make test); make ceiling-table rewrites the README's table of it
#   make cluster-e2e everything above a single policy against the real control plane (part of
#               make test): etcd, kube-apiserver, kubectl and helm built from e2e/cluster's Go
#               modules (make cluster-bin, cached in ~/.cache/tenancy-policies), deploy/ and the
#               chart installed, every manifest through a server-side dry run, every case and
#               Capsule scenario request through the API server to the real policy-server
#   make capsule-compare Capsule v0.14 itself as the judge of every Capsule scenario (part of make
#               test): the same Tenants and requests through real Capsule and through the bundle,
#               each disagreement reported by convert or documented in docs/capsule.md
#   make cluster-up / cluster-down  a cluster to try things on (kubectl --kubeconfig
#               target/cluster/kube-apiserver.kubeconfig), and its end
#   make chart  write charts/tenancy-policies from capsule-bindings install (a test checks it)
#   make fuzz   every policy's cargo-fuzz targets, FUZZ_SECONDS each (nightly; not in `make test`)

SHELL := /bin/bash
CARGO ?= cargo
WASM_TARGET := wasm32-wasip1
TARGET_DIR := $(or $(CARGO_TARGET_DIR),target)
WASM_DIR := $(TARGET_DIR)/$(WASM_TARGET)/release
# make run's modules: Cargo profile `run-wasm` (Cargo.toml), quicker to build than release
RUN_WASM_DIR := $(TARGET_DIR)/$(WASM_TARGET)/run-wasm
# ... and only those make run evaluates: the seed example's and the solar Tenant's bindings'
# (crates/capsule-bindings/tests/make_run.rs fails when this list and make run part ways)
RUN_POLICIES := pod-toleration-policy container-registry-policy device-class-policy \
  gateway-class-policy image-pull-policy ingress-policy limit-range-policy \
  namespace-organization-policy node-selector-policy persistent-volume-claim-policy \
  priority-class-policy protected-objects-policy runtime-class-policy service-policy \
  tenant-metadata-policy
TESTDRIVE := $(TARGET_DIR)/host/testdrive
CAPSULE_BINDINGS := $(TARGET_DIR)/host/capsule-bindings
# make run's own builds of the two host programs: Cargo profile `quick` (Cargo.toml)
RUN_TESTDRIVE := $(TARGET_DIR)/quick/testdrive
RUN_CAPSULE_BINDINGS := $(TARGET_DIR)/quick/capsule-bindings
POLICIES := $(notdir $(wildcard policies/*-policy))
POLICY_PKGS := $(foreach p,$(POLICIES),-p $(p))
BUILD_POLICIES = $(CARGO) build --release --target $(WASM_TARGET) $(POLICY_PKGS)
# the core's layers, bottom first (docs/semantics.md#layers)
CORE_PKGS := -p policy-decode -p kube-values -p policy-admission -p tenancy-rules
# The real Kubewarden tools: KWCTL for make e2e, POLICY_SERVER for make bench-server and
# make publish-local (policy-server on PATH, else the one beside $(KWCTL)).
KWCTL ?= $(shell command -v kwctl 2> /dev/null)
POLICY_SERVER ?= $(or $(shell command -v policy-server 2> /dev/null),$(if $(KWCTL),$(wildcard $(dir $(KWCTL))policy-server)))
# Modules compiled by testdrive and capsule-bindings are cached here between their runs
# (policy-host, TENANCY_WASM_CACHE); delete it freely.
export TENANCY_WASM_CACHE ?= $(abspath $(TARGET_DIR))/wasmtime-cache
SEED_SETTINGS := test_data/pod-toleration-policy/settings/seed.yaml
SEED_REQUESTS := test_data/pod-toleration-policy/requests
CAPSULE_DATA := test_data/capsule-bindings
# Alice's requests shown by make run after the solar Tenant is converted: first her namespace
# (the tenant label written by the ownership binding), then what she runs in it
SOLAR_REQUESTS := $(addprefix $(CAPSULE_DATA)/requests/,namespace-create-solar-dev.json pod.json pod-image-gcr.json \
  pvc-no-class.json service-node-port.json ingress-host-bank.json gateway-no-class.json \
  claim-gpu-secret.json pod-oil-dev.json)

.PHONY: run run-build test setup ceiling-check ceiling-table fmt fmt-check lint unit policies testdrive check annotate bench e2e e2e-if-kwctl bench-server publish-local install-e2e install-footprint deploy fuzz clean

# make run builds only what it runs: the wasm modules it evaluates (RUN_POLICIES, profile
# `run-wasm`: the shipped code at opt-level "z", same verdicts, about half the build time of
# release's opt-level 3) and the two host binaries in the `quick` profile, in two cargo
# processes side by side. The host build has the
# longer serial chain (wasmtime's), so the wasm build runs at a lower CPU priority and fills
# the idle core. make test builds its own host programs in the `host` profile (target testdrive).
run: setup run-build
	@echo "== seed example: bob (not in tenantA-users) tolerates dedicated=tenantA =="
	$(RUN_TESTDRIVE) run $(RUN_WASM_DIR)/pod_toleration_policy.wasm \
	  --metadata policies/pod-toleration-policy/metadata.yml \
	  --settings-path $(SEED_SETTINGS) \
	  --request-path $(SEED_REQUESTS)/pod-equal-dedicated-bob.json
	@echo "== seed example: alice (in tenantA-users) tolerates dedicated=tenantA =="
	$(RUN_TESTDRIVE) run $(RUN_WASM_DIR)/pod_toleration_policy.wasm \
	  --metadata policies/pod-toleration-policy/metadata.yml \
	  --settings-path $(SEED_SETTINGS) \
	  --request-path $(SEED_REQUESTS)/pod-equal-dedicated-member.json
	@echo "== Capsule: the seed's solar Tenant converted into this bundle's bindings (findings on stderr) =="
	$(RUN_CAPSULE_BINDINGS) convert $(CAPSULE_DATA)/tenants/solar.yaml --registry ghcr.io/acme \
	  --wasm-dir $(RUN_WASM_DIR) --output $(TARGET_DIR)/solar-bindings.yaml
	@echo "== Capsule: Alice's requests through the solar bindings (which binding admitted, mutated or refused each, and why) =="
	$(RUN_CAPSULE_BINDINGS) try $(TARGET_DIR)/solar-bindings.yaml --cluster $(CAPSULE_DATA)/solar-cluster.yaml \
	  --wasm-dir $(RUN_WASM_DIR) --request-path $(SOLAR_REQUESTS)

# policies before unit: the tests of what a built module costs (crates/testdrive/tests/
# instance_memory.rs, instance_faults.rs) load it, and skip when it is missing
test: setup fmt-check lint policies unit testdrive check ceiling-check e2e-if-kwctl cluster-e2e capsule-compare

run-build:
	@nice -n 19 $(CARGO) build --profile run-wasm --target $(WASM_TARGET) $(foreach p,$(RUN_POLICIES),-p $(p)) & wasm=$$!; \
	  $(CARGO) build --profile quick -p testdrive -p capsule-bindings --bins; host=$$?; \
	  wait $$wasm && exit $$host

# The wasm target is checked by building for it (a target unpacked by
# ../shared/rust/install-wasm-target.sh is not in rustup's list): rustup downloads it, else the
# offline copy beside the workspace is installed.
WASM_TARGET_FALLBACK ?= $(abspath ../shared/rust/install-wasm-target.sh)
setup:
	@echo 'fn main() {}' > $(TARGET_DIR)/wasm-target-probe.rs 2> /dev/null || { mkdir -p $(TARGET_DIR) && echo 'fn main() {}' > $(TARGET_DIR)/wasm-target-probe.rs; }
	@rustc --target $(WASM_TARGET) --crate-type bin -o $(TARGET_DIR)/wasm-target-probe.wasm $(TARGET_DIR)/wasm-target-probe.rs 2> /dev/null || \
	  rustup target add $(WASM_TARGET) || $(WASM_TARGET_FALLBACK)
	@rustc --target $(WASM_TARGET) --crate-type bin -o $(TARGET_DIR)/wasm-target-probe.wasm $(TARGET_DIR)/wasm-target-probe.rs || \
	  { echo "no $(WASM_TARGET) target: rustup target add $(WASM_TARGET) failed, and so did $(WASM_TARGET_FALLBACK)"; exit 1; }
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
	$(CARGO) clippy --target $(WASM_TARGET) $(CORE_PKGS) $(POLICY_PKGS) -- -D warnings
	# the layers' documentation (cargo doc) builds without a broken link
	RUSTDOCFLAGS='-D warnings' $(CARGO) doc --no-deps --all-features $(CORE_PKGS)

# Every crate's tests, then the doc tests (`--doc` takes no other target): not the policies'
# native-bench examples, which plain `cargo test` also builds, 4.5 of the 49 CPU-minutes of
# this build (make lint checks that they compile; make bench builds and runs them).
unit:
	status=0; \
	$(CARGO) test --profile host --workspace --no-fail-fast --lib --bins --tests || status=$$?; \
	$(CARGO) test --profile host --workspace --no-fail-fast --doc || status=$$?; \
	exit $$status

policies:
	$(BUILD_POLICIES)

# Built with the whole workspace's targets that `make unit` builds, so that shared
# dependencies (wasmtime among them) get the same features: building testdrive alone would
# unify features differently and compile wasmtime a second time.
testdrive:
	$(CARGO) build --profile host --workspace --lib --bins --tests

# The install directory (README "Installing"): capsule-bindings install writes deploy/ (the
# PolicyServer, its ServiceAccount, the ClusterRole computed from every policy's
# contextAwareResources, its binding, the baseline bindings, kustomization.yaml). Run it after
# changing a policy's metadata: a unit test regenerates deploy/ and fails on any drift.
deploy: testdrive
	$(CAPSULE_BINDINGS) install --output deploy

# The tenant ceiling of deploy/'s tenancy-rbac binding beside Kubernetes' own aggregated
# `edit` and `admin` (README "The tenant ceiling"): the bootstrap ClusterRoles of the module
# k8s.io/kubernetes (downloaded by the Go module proxy into Go's module cache, never copied
# here), aggregated as Kubernetes aggregates them. Fails when the ceiling grants what `admin`
# does not, differs from `edit` without a reason, or the README's table is stale; its line
# "ceiling: N permissions, none beyond admin of k8s.io/kubernetes vX ...". Without Go it says
# it was skipped (CI fails then). make ceiling-table rewrites the README's table.
KUBERNETES_VERSION = $(KUBE_VERSION)
KUBERNETES_ROLES = $$(cd $(TARGET_DIR) && go mod download -json k8s.io/kubernetes@$(KUBERNETES_VERSION) \
  | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p')/plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles.yaml
ceiling-check: testdrive
	@if ! command -v go > /dev/null; then \
	  echo "ceiling-check skipped: no go, which downloads Kubernetes' roles (k8s.io/kubernetes@$(KUBERNETES_VERSION))"; exit 0; fi; \
	roles=$(KUBERNETES_ROLES); test -f "$$roles" || { echo "ceiling-check: no $$roles"; exit 1; }; \
	$(CAPSULE_BINDINGS) ceiling --roles "$$roles" --source "k8s.io/kubernetes $(KUBERNETES_VERSION)" --check README.md

ceiling-table: testdrive
	roles=$(KUBERNETES_ROLES); $(CAPSULE_BINDINGS) ceiling --roles "$$roles" \
	  --source "k8s.io/kubernetes $(KUBERNETES_VERSION)" --write README.md

# The real control plane of make cluster-e2e, built from the Go modules of e2e/cluster (their
# go.mod and go.sum pin the versions; nothing built is committed) into CLUSTER_CACHE, one
# directory per version, and only what is missing is built: kube-apiserver and kubectl from
# k8s.io/kubernetes (their /version set by -ldflags as Kubernetes' own build sets it), etcd
# from go.etcd.io/etcd/server/v3, helm from helm.sh/helm/v3 (its default Kubernetes version,
# which helm lint and helm template check Chart.yaml's kubeVersion against, set to that of its
# client-go, as helm's own build does).
CLUSTER_CACHE ?= $(HOME)/.cache/tenancy-policies
go_require = $(shell awk '$$1 == "$(2)" { v = $$2 } $$1 == "require" && $$2 == "$(2)" { v = $$3 } END { print v }' e2e/cluster/$(1)/go.mod)
KUBE_VERSION := $(call go_require,kube,k8s.io/kubernetes)
ETCD_VERSION := $(call go_require,etcd,go.etcd.io/etcd/server/v3)
HELM_VERSION := $(call go_require,helm,helm.sh/helm/v3)
KUBE_BIN := $(CLUSTER_CACHE)/kube-$(KUBE_VERSION)
ETCD_BIN := $(CLUSTER_CACHE)/etcd-$(ETCD_VERSION)
HELM_BIN := $(CLUSTER_CACHE)/helm-$(HELM_VERSION)
kube_minor = $(word 2,$(subst ., ,$(1)))
KUBE_LDFLAGS := $(foreach pkg,k8s.io/component-base/version k8s.io/client-go/pkg/version, \
  -X $(pkg).gitVersion=$(KUBE_VERSION) -X $(pkg).gitMajor=1 -X $(pkg).gitMinor=$(call kube_minor,$(KUBE_VERSION)) \
  -X $(pkg).gitTreeState=clean)
CLUSTER_TOOLS := $(KUBE_BIN)/kube-apiserver $(KUBE_BIN)/kubectl $(ETCD_BIN)/etcd $(HELM_BIN)/helm
.PHONY: cluster-bin capsule-bin cluster-up cluster-down cluster-e2e capsule-compare capsule-table generated-manifests chart
cluster-bin: $(CLUSTER_TOOLS)
$(KUBE_BIN)/kube-apiserver $(KUBE_BIN)/kubectl &:
	@mkdir -p $(KUBE_BIN)
	cd e2e/cluster/kube && go build -trimpath -ldflags '$(KUBE_LDFLAGS)' -o $(KUBE_BIN)/.build/ \
	  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl
	mv $(KUBE_BIN)/.build/kube-apiserver $(KUBE_BIN)/.build/kubectl $(KUBE_BIN)/ && rmdir $(KUBE_BIN)/.build
$(ETCD_BIN)/etcd:
	@mkdir -p $(ETCD_BIN)
	cd e2e/cluster/etcd && go build -trimpath -o $(ETCD_BIN)/.etcd go.etcd.io/etcd/server/v3
	mv $(ETCD_BIN)/.etcd $@
$(HELM_BIN)/helm:
	@mkdir -p $(HELM_BIN)
	cd e2e/cluster/helm && client=$$(go list -m -f '{{.Version}}' k8s.io/client-go) && minor=$$(echo $$client | cut -d. -f2) && \
	  go build -trimpath -ldflags "-X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	    -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$$minor \
	    -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$$minor" \
	  -o $(HELM_BIN)/.helm helm.sh/helm/v3/cmd/helm
	mv $(HELM_BIN)/.helm $@

# Capsule's controller and webhook server (github.com/projectcapsule/capsule cmd/controller,
# pinned by e2e/cluster/capsule), the judge of make capsule-compare, its version reported as
# Capsule's own build reports it.
CAPSULE_VERSION := $(call go_require,capsule,github.com/projectcapsule/capsule)
CAPSULE_BIN := $(CLUSTER_CACHE)/capsule-$(CAPSULE_VERSION)
capsule-bin: $(CAPSULE_BIN)/capsule
$(CAPSULE_BIN)/capsule:
	@mkdir -p $(CAPSULE_BIN)
	cd e2e/cluster/capsule && go build -trimpath \
	  -ldflags "-X github.com/projectcapsule/capsule/internal/version.GitTag=$(CAPSULE_VERSION) \
	    -X github.com/projectcapsule/capsule/internal/version.GitRepo=github.com/projectcapsule/capsule \
	    -X github.com/projectcapsule/capsule/internal/version.GitDirty=" \
	  -o $(CAPSULE_BIN)/.capsule github.com/projectcapsule/capsule/cmd/controller
	mv $(CAPSULE_BIN)/.capsule $@

# The cluster of make cluster-up / cluster-e2e (crates/control-plane): etcd and kube-apiserver
# on loopback ports, a client-certificate admin in system:masters (kubectl --kubeconfig
# $(CLUSTER_DIR)/kube-apiserver.kubeconfig), RBAC, service-account tokens, the admission
# webhooks on, and the CRDs the bundle needs applied. make cluster-down stops every server
# recorded in $(CLUSTER_DIR)/pids and removes the directory.
CLUSTER_DIR := $(abspath $(TARGET_DIR))/cluster
CONTROL_PLANE := $(TARGET_DIR)/host/control-plane
GATEWAY_API_CRDS ?= $(abspath ../shared/gateway-api/config/crd/standard)
CAPSULE_CRDS ?= $(abspath ../shared/capsule/chart/crds)
CLUSTER_CRDS = $(KUBEWARDEN_CRDS) $(GATEWAY_API_CRDS) $(CAPSULE_CRDS)
CLUSTER_UP_ARGS = --etcd $(ETCD_BIN)/etcd --kube-apiserver $(KUBE_BIN)/kube-apiserver --kubectl $(KUBE_BIN)/kubectl \
  $(foreach d,$(CLUSTER_CRDS),--crds $(d))
cluster-up: testdrive cluster-bin
	$(CONTROL_PLANE) up --dir $(CLUSTER_DIR) $(CLUSTER_UP_ARGS)

cluster-down:
	@if [ -x $(CONTROL_PLANE) ]; then $(CONTROL_PLANE) down --dir $(CLUSTER_DIR); else rm -rf $(CLUSTER_DIR); fi

# Everything above a single policy against the real control plane (crates/control-plane,
# README "Every manifest works as written"): its own cluster in $(CLUSTER_DIR)/e2e, stopped
# when the run ends however it ends (the servers die with control-plane, and the trap stops
# what is left); deploy/ applied server-side; every documented and generated manifest through
# a server-side dry run; the chart linted, rendered for two sets of values and compared with
# capsule-bindings install, then installed in place of deploy/; the tenant ceiling against the
# live roles; install-e2e's cases and every Capsule scenario request sent through the API
# server as the tenant, to the real policy-server under deploy/'s RBAC. Its last line
# "cluster-e2e: kube-apiserver vX, N objects applied, M requests through the API server as
# tenants, M as expected, RBAC by the API server (R reads granted, D refused as expected)".
# Without Go (which builds the control plane) it says it was skipped (CI fails then).
cluster-e2e: testdrive generated-manifests annotate
	@if ! command -v go > /dev/null; then echo "cluster-e2e skipped: no go, which builds kube-apiserver, etcd and helm (e2e/cluster)"; exit 0; fi; \
	if [ -z "$(POLICY_SERVER)" ]; then echo "cluster-e2e skipped: no policy-server (set POLICY_SERVER=/path/to/policy-server)"; exit 0; fi; \
	$(MAKE) --no-print-directory cluster-bin || exit 1; \
	trap '$(CONTROL_PLANE) down --dir $(CLUSTER_DIR)/e2e > /dev/null 2>&1 || true' EXIT; \
	$(CONTROL_PLANE) e2e --dir $(CLUSTER_DIR)/e2e $(CLUSTER_UP_ARGS) --helm $(HELM_BIN)/helm \
	  --capsule-bindings $(CAPSULE_BINDINGS) --policy-server $(POLICY_SERVER) \
	  --modules-dir $(TARGET_DIR)/annotated --wasm-dir $(WASM_DIR) \
	  --generated $(TARGET_DIR)/manifests/capsule --generated $(TARGET_DIR)/manifests/install

# Capsule itself as the judge of the Capsule scenarios (crates/control-plane capsule/, README
# "Coming from Capsule"): every scenario request through the bundle's plane as cluster-e2e
# sends it, then through Capsule's plane (its own kube-apiserver on the same etcd, Capsule's
# CRDs and the CapsuleConfiguration its chart renders, Capsule run out of cluster on a test
# host, a network namespace in 198.18.0.0/30, where its webhook server listens), as the same
# user with a server-side dry run, and the two answers compared. Each disagreement must be a
# known difference (test_data/capsule-bindings/capsule-differences.yaml) that convert reports
# or docs/capsule.md explains, and docs/capsule.md's agreement table this run's. Its last line
# "capsule-compare: N requests, A agree, D disagree (R reported by convert, K documented, S
# silent)". It needs root (the test host's network namespace).
CAPSULE_CHART ?= $(abspath ../shared/capsule/chart)
capsule-compare: testdrive annotate
	@if ! command -v go > /dev/null; then echo "capsule-compare skipped: no go, which builds Capsule and the control plane (e2e/cluster)"; exit 0; fi; \
	if [ -z "$(POLICY_SERVER)" ]; then echo "capsule-compare skipped: no policy-server (set POLICY_SERVER=/path/to/policy-server)"; exit 0; fi; \
	if [ "$$(id -u)" != 0 ]; then echo "capsule-compare skipped: not root, which the test host's network namespace needs"; exit 0; fi; \
	$(MAKE) --no-print-directory cluster-bin capsule-bin || exit 1; \
	trap '$(CONTROL_PLANE) down --dir $(CLUSTER_DIR)/compare > /dev/null 2>&1 || true' EXIT; \
	$(CONTROL_PLANE) compare --dir $(CLUSTER_DIR)/compare $(CLUSTER_UP_ARGS) --helm $(HELM_BIN)/helm \
	  --capsule $(CAPSULE_BIN)/capsule --capsule-chart $(CAPSULE_CHART) --policy-server $(POLICY_SERVER) \
	  --modules-dir $(TARGET_DIR)/annotated --wasm-dir $(WASM_DIR) $(CAPSULE_COMPARE_ARGS)

# make capsule-compare, writing its agreement table into docs/capsule.md.
capsule-table:
	$(MAKE) --no-print-directory capsule-compare CAPSULE_COMPARE_ARGS=--write-table

# The chart charts/tenancy-policies, written by capsule-bindings chart from install's own
# objects (a test regenerates it and fails on any drift).
chart: testdrive
	$(CAPSULE_BINDINGS) chart --output charts/tenancy-policies

# Kubewarden's CRDs (OpenAPI schemas every manifest is validated against): beside $(KWCTL)
# in ../shared/kubewarden, else none (testdrive manifests then says the schemas were not applied).
KUBEWARDEN_CRDS ?= $(firstword $(wildcard $(dir $(KWCTL))../crds))

# The capsule-bindings scenario cases through the built wasm (`testdrive capsule-check`); then
# every manifest of the repository and of capsule-bindings' conversion of every test Tenant
# (`testdrive manifests`: Kubewarden's CRD schemas, module references, settings, rules,
# mutating, contextAwareResources), every questions-ui.yml and example-settings.yml, and the
# values derived from .github/publishing.env; then every declarative case of every policy,
# through the built wasm (after `testdrive shapes`:
# every lookup answer of every case served again with one field of the wrong shape, which
# must leave the verdict as it was or end as a failed lookup, and `testdrive audit`: every
# object of every test_data/<policy>/audit.yaml sent as Kubewarden's audit scanner sends it,
# reported as the file expects; docs/semantics.md#audit). Its last line is
# "N passed, N failed".
check: policies testdrive generated-manifests
	$(TESTDRIVE) capsule-check --wasm-dir $(WASM_DIR)
	$(TESTDRIVE) manifests --wasm-dir $(WASM_DIR) \
	  --generated $(TARGET_DIR)/manifests/capsule --generated $(TARGET_DIR)/manifests/install
	$(TESTDRIVE) shapes --wasm-dir $(WASM_DIR)
	$(TESTDRIVE) audit --wasm-dir $(WASM_DIR)
	$(TESTDRIVE) check --wasm-dir $(WASM_DIR)

# The generated manifests make check and make cluster-e2e judge: capsule-bindings' conversion
# of every test Tenant (those named invalid-* must be refused), capsule-bindings install with
# every flag, the solar Tenant converted with placement flags, and deploy/ rendered by kubectl
# kustomize.
generated-manifests: policies testdrive
	@rm -rf $(TARGET_DIR)/manifests/capsule && mkdir -p $(TARGET_DIR)/manifests/capsule
	@for t in $(CAPSULE_DATA)/tenants/*.yaml; do \
	  if $(CAPSULE_BINDINGS) convert $$t --registry ghcr.io/acme --wasm-dir $(WASM_DIR) \
	    --output $(TARGET_DIR)/manifests/capsule/$$(basename $$t) 2> /dev/null; \
	  then case $$t in */invalid-*) echo "capsule-bindings converted $$t, which it must refuse"; exit 1;; esac; \
	  else case $$t in */invalid-*) ;; *) echo "capsule-bindings cannot convert $$t"; exit 1;; esac; fi; \
	done
	@rm -rf $(TARGET_DIR)/manifests/install && mkdir -p $(TARGET_DIR)/manifests/install
	$(CAPSULE_BINDINGS) install --output $(TARGET_DIR)/manifests/install/monitor --mode monitor \
	  --policy-server tenants --replicas 3 --failure-policy Ignore --timeout-seconds 5 \
	  --skip-namespace kube-system --skip-namespace monitoring --opt-in openshift --opt-in legacy-ingress
	$(CAPSULE_BINDINGS) convert $(CAPSULE_DATA)/tenants/solar.yaml --registry ghcr.io/acme --wasm-dir $(WASM_DIR) \
	  --mode monitor --policy-server tenants --opt-in legacy-ingress \
	  --output $(TARGET_DIR)/manifests/install/solar-monitor.yaml 2> /dev/null
	@if command -v kubectl > /dev/null; then \
	  kubectl kustomize deploy > $(TARGET_DIR)/manifests/install/kustomize-deploy.yaml && \
	  echo "kubectl kustomize deploy: $$(grep -c '^kind:' $(TARGET_DIR)/manifests/install/kustomize-deploy.yaml) objects rendered"; \
	else echo "kubectl kustomize deploy: skipped (no kubectl)"; fi

# Every declarative case through the real kwctl: kwctl annotate (no warning allowed), kwctl
# scaffold artifacthub, then kwctl run per case (replay sessions; `cluster:` objects recorded
# into one), judged like `check` and compared with testdrive's answer; its line
# "N passed, N failed". Then make publish-local and make install-e2e (they need policy-server
# too), and every audit file through the real policy-server's /audit/<id> (annotated modules,
# lookups answered by testdrive's fake API server), whose reports must be the expected ones and
# testdrive's; its last line "audit: N objects of N policies, N pass, N fail, as expected
# through testdrive and policy-server".
e2e: policies testdrive
	@test -n "$(KWCTL)" || { echo "make e2e needs kwctl: set KWCTL=/path/to/kwctl or put kwctl on PATH"; exit 1; }
	$(TESTDRIVE) capsule-check --wasm-dir $(WASM_DIR) --kwctl $(KWCTL) --work-dir $(TARGET_DIR)/e2e-capsule-bindings
	$(TESTDRIVE) e2e --kwctl $(KWCTL) --wasm-dir $(WASM_DIR) --work-dir $(TARGET_DIR)/e2e
	$(MAKE) --no-print-directory publish-local
	$(MAKE) --no-print-directory install-e2e
	$(TESTDRIVE) audit --wasm-dir $(WASM_DIR) --policy-server $(POLICY_SERVER) \
	  --annotated-dir $(TARGET_DIR)/annotated --work-dir $(TARGET_DIR)/audit

e2e-if-kwctl:
	@if [ -n "$(KWCTL)" ]; then $(MAKE) --no-print-directory e2e; \
	else echo "e2e skipped: no kwctl found (set KWCTL=/path/to/kwctl or put kwctl on PATH)"; fi

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
# reused one (as kwctl bench), for the bench.yaml scenarios and the generated ones (a ~1 MiB
# object; settings with 10 / 1,000 / 10,000 entries); then the cost budgets (docs/semantics.md#cost)
# (1 MiB object < 50 ms; 10,000 entries < 5x the 10-entry time), and the same inputs through
# the core natively, for the policies that have examples/native_bench.rs. Fails when a
# budget is over, after printing everything.
bench: policies testdrive
	@status=0; \
	$(TESTDRIVE) bench --wasm-dir $(WASM_DIR) || status=$$?; \
	$(TESTDRIVE) bench --emit-payloads $(TARGET_DIR)/bench-inputs > /dev/null || exit 1; \
	for p in $(POLICIES); do \
	  if [ -f policies/$$p/examples/native_bench.rs ] && [ -f $(TARGET_DIR)/bench-inputs/$$p.json ]; then \
	    $(CARGO) run -q --profile host -p $$p --example $$p-native-bench -- $(TARGET_DIR)/bench-inputs/$$p.json || exit 1; \
	  fi; \
	done; \
	exit $$status

# Requests per second in the real policy-server ($(POLICY_SERVER), else policy-server on PATH),
# driven by wrk (installed from Debian's packages when missing): every bench scenario (lookups
# answered by testdrive's fake API server from the scenario's recorded answers), its host
# floor (same payload, operation CONNECT) and Kubewarden's own policies named in bench.yaml
# (from $(KUBEWARDEN_ANCHORS)), BENCH_SECONDS each, alternated and run twice; per request the
# page faults and CPU time of policy-server (perf stat, from Debian's linux-perf) and the
# instance's peak linear memory; then the goals, met or missed in each run (reported, not
# enforced). BENCH_SERVER_DIRS limits it to some policy directories. Not part of make test.
BENCH_SECONDS ?= 3
BENCH_SERVER_DIRS ?=
KUBEWARDEN_ANCHORS ?= $(dir $(POLICY_SERVER))../anchors
bench-server: annotate
	@test -n "$(POLICY_SERVER)" || { echo "make bench-server needs policy-server: set POLICY_SERVER=/path/to/policy-server or put it on PATH"; exit 1; }
	@command -v wrk > /dev/null || { sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get install -y wrk || { $$sudo apt-get update && $$sudo apt-get install -y wrk; }; }
	@command -v perf > /dev/null || { sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get install -y linux-perf || echo "no perf: page faults and CPU time per request are not reported"; }
	@# the peak-memory probes make the guest abort on purpose; its "memory allocation of N bytes
	@# failed" lines on stderr are dropped
	set -o pipefail; $(TESTDRIVE) bench-server --policy-server $(POLICY_SERVER) --anchors-dir $(KUBEWARDEN_ANCHORS) \
	  --wasm-dir $(WASM_DIR) --annotated-dir $(TARGET_DIR)/annotated --work-dir $(TARGET_DIR)/bench-server \
	  --seconds $(BENCH_SECONDS) $(BENCH_SERVER_DIRS) \
	  2> >(grep -v -e '^memory allocation of [0-9]* bytes failed$$' -e 'RUST_BACKTRACE' >&2)

# The release rehearsed on this machine (testdrive publish-local): a local OCI registry
# (Debian's docker-registry, installed with jq when missing) on a free loopback port, its
# storage wiped, stopped at the end whatever happens (testdrive owns the process); every
# annotated module pushed by .github/scripts/release.sh push (the workflow's script, so the
# reading of kwctl's JSON output is tested) to registry://127.0.0.1:<port>/tenancy-policies/
# <policy>:v<version>; the real policy-server started on all of them by immutable reference
# (the registry insecure through a sources file, lookups answered by testdrive's fake API
# server), one declarative case per policy sent to it and judged by the case and against
# testdrive; release.sh artifacthub for every policy and all release.sh artifacthub-push at
# once into one local bare repository (the retry loop exercised), every package on the branch
# checked against its metadata; every README's kwctl scaffold manifest command run against
# the local registry into $(PUBLISH_DIR)/scaffold/<policy>.yaml. Its last line is
# "publish-local: N pushed, N pulled by policy-server, N/N answered as expected".
PUBLISH_DIR := $(TARGET_DIR)/publish-local
publish-local: annotate
	@test -n "$(KWCTL)" || { echo "make publish-local needs kwctl: set KWCTL=/path/to/kwctl or put kwctl on PATH"; exit 1; }
	@test -n "$(POLICY_SERVER)" || { echo "make publish-local needs policy-server: set POLICY_SERVER=/path/to/policy-server, put it on PATH or beside $(KWCTL)"; exit 1; }
	@missing=""; for tool in docker-registry jq; do command -v $$tool > /dev/null || missing="$$missing $$tool"; done; \
	if [ -n "$$missing" ]; then sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get install -y $$missing || { $$sudo apt-get update && $$sudo apt-get install -y $$missing; }; fi
	$(TESTDRIVE) publish-local --kwctl $(KWCTL) --policy-server $(POLICY_SERVER) --wasm-dir $(WASM_DIR) \
	  --annotated-dir $(TARGET_DIR)/annotated --work-dir $(PUBLISH_DIR)
	$(TESTDRIVE) manifests --wasm-dir $(WASM_DIR) \
	  --generated $(PUBLISH_DIR)/scaffold

# The install directory run as Kubewarden runs it (needs $(POLICY_SERVER)). testdrive install-e2e:
# deploy/'s PolicyServer, the ClusterRole bound to its ServiceAccount and its bindings, plus a
# ClusterAdmissionPolicy per context-aware policy (its metadata, one case's settings), turned
# into policies.yml as kubewarden-controller does and run by the real policy-server, whose
# lookups the fake API server answers under that ClusterRole (403 Forbidden otherwise); each
# case routed as the API server routes it (rules, namespaceSelector); last line
# "install-e2e: N policies loaded as the controller would, N/N answered as expected, RBAC
# enforced (N reads granted, N refused)". It must fail when the role lacks a resource a policy
# reads and when a binding lacks a contextAwareResources entry (both shown on
# priority-class-policy). Then every Capsule scenario request through policy-server
# (testdrive capsule-check --policy-server) and the ClusterAdmissionPolicyGroup example (its
# tests built with --workspace, as make unit builds them, so wasmtime is not compiled again).
INSTALL_E2E_DIR := $(TARGET_DIR)/install-e2e
install-e2e: annotate
	@test -n "$(POLICY_SERVER)" || { echo "make install-e2e needs policy-server: set POLICY_SERVER=/path/to/policy-server, put it on PATH or beside $(KWCTL)"; exit 1; }
	$(TESTDRIVE) install-e2e --policy-server $(POLICY_SERVER) --deploy deploy \
	  --modules-dir $(TARGET_DIR)/annotated --wasm-dir $(WASM_DIR) --work-dir $(INSTALL_E2E_DIR)/install
	@for hole in "--drop-role-resource priorityclasses=403 Forbidden" \
	  "--drop-context-aware priority-class-policy=has not been granted access"; do \
	  flag=$${hole%%=*}; expected=$${hole#*=}; log=$(INSTALL_E2E_DIR)/hole.log; \
	  if $(TESTDRIVE) install-e2e policies/priority-class-policy --policy-server $(POLICY_SERVER) --deploy deploy \
	    --modules-dir $(TARGET_DIR)/annotated --wasm-dir $(WASM_DIR) --work-dir $(INSTALL_E2E_DIR)/hole $$flag > $$log 2>&1; \
	  then echo "install-e2e $$flag passed: it must fail (see $$log)"; exit 1; fi; \
	  grep -q "FAIL priority-class-policy.*$$expected" $$log || { echo "install-e2e $$flag failed without \"$$expected\" (see $$log)"; exit 1; }; \
	  echo "install-e2e $$flag fails as it must: $$expected"; \
	done
	$(TESTDRIVE) capsule-check --policy-server $(POLICY_SERVER) --install-dir deploy \
	  --modules-dir $(TARGET_DIR)/annotated --wasm-dir $(WASM_DIR) --work-dir $(INSTALL_E2E_DIR)/capsule
	POLICY_SERVER=$(POLICY_SERVER) $(CARGO) test --profile host --workspace --test policy_group --test install_e2e --test instance_memory

# policy-server's start time and memory for deploy/ plus 0, 100 and 1,000 copies of the solar
# Tenant (12 bindings each), loaded as kubewarden-controller would load them: one line
# "footprint: N tenants, N policies loaded …, ready in S s, M MiB resident (peak P MiB)" each.
# A benchmark: not part of make test.
install-footprint: annotate
	@test -n "$(POLICY_SERVER)" || { echo "make install-footprint needs policy-server: set POLICY_SERVER=/path/to/policy-server"; exit 1; }
	$(TESTDRIVE) capsule-footprint --policy-server $(POLICY_SERVER) --install-dir deploy \
	  --modules-dir $(TARGET_DIR)/annotated --wasm-dir $(WASM_DIR) --work-dir $(TARGET_DIR)/footprint \
	  --tenants 0 --tenants 100 --tenants 1000

# Fuzzing (cargo-fuzz on nightly, native, address sanitizer by default): per policy
# `<short>_validate` (validate payloads, against an empty and a failing cluster) and
# `<short>_settings`, seeded from every case (`testdrive seeds`), one target at a time for
# FUZZ_SECONDS each. libFuzzer runs in fork mode so that a crash is recorded in
# fuzz/artifacts/<target>/ and fuzzing goes on. One line per target:
# "<target>: N execs, N crashes" (crashes = crashing inputs saved by this run, seeds
# included); then every artifact. Logs in $(FUZZ_LOGS)/; the corpus
# grows in fuzz/corpus/<target>/. Reproduce: cargo +nightly fuzz run <target> <artifact>.
FUZZ_SECONDS ?= 60
FUZZ_SANITIZER ?= address
FUZZ_MAX_LEN ?= 16384
FUZZ_RSS_MB ?= 2048
FUZZ_SEEDS := $(TARGET_DIR)/fuzz-seeds
FUZZ_LOGS := $(TARGET_DIR)/fuzz-logs
FUZZ := cargo +nightly fuzz

fuzz: setup testdrive
	@command -v cargo-fuzz > /dev/null 2>&1 || $(CARGO) install cargo-fuzz --locked
	$(TESTDRIVE) seeds --out $(FUZZ_SEEDS)
	CARGO_BUILD_JOBS=2 $(FUZZ) build -s $(FUZZ_SANITIZER)
	@mkdir -p $(FUZZ_LOGS); status=0; \
	for p in $(POLICIES); do \
	  short=$$(echo $${p%-policy} | tr - _); \
	  for kind in validate settings; do \
	    t=$${short}_$$kind; log=$(FUZZ_LOGS)/$$t.log; \
	    mkdir -p fuzz/corpus/$$t fuzz/artifacts/$$t $(FUZZ_SEEDS)/$$p/$$kind; \
	    stamp=$$(mktemp); \
	    $(FUZZ) run -s $(FUZZ_SANITIZER) $$t fuzz/corpus/$$t $(FUZZ_SEEDS)/$$p/$$kind -- \
	      -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN) -rss_limit_mb=$(FUZZ_RSS_MB) \
	      -timeout=10 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
	      > $$log 2>&1; \
	    new() { find fuzz/artifacts/$$t -name "$$1-*" -newer $$stamp | wc -l; }; \
	    crashes=$$(new crash); timeouts=$$(new timeout); ooms=$$(new oom); rm -f $$stamp; \
	    execs=$$(grep -E '^#[0-9]+: ' $$log | tail -n 1 | sed -E 's/^#([0-9]+):.*/\1/'); \
	    if [ -z "$$execs" ]; then echo "$$t: did not run, see $$log"; status=1; continue; fi; \
	    extra=""; [ "$$timeouts$$ooms" = 00 ] || extra=" ($$timeouts timeouts, $$ooms out-of-memory)"; \
	    echo "$$t: $$execs execs, $$crashes crashes$$extra"; \
	    [ "$$crashes" = 0 ] || status=1; \
	  done; \
	done; \
	ls fuzz/artifacts/*/* 2> /dev/null | sed 's/^/  artifact: /'; \
	exit $$status

clean:
	$(CARGO) clean
