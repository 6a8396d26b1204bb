# agentbox — see README.md.
GO       ?= go
BIN      := $(CURDIR)/bin/agentbox
IMAGE    ?= agentbox/base:latest
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
LDFLAGS  := -s -w -X github.com/agentbox/agentbox.Version=$(VERSION) -X main.commit=$(COMMIT)

.PHONY: all build image images image-k8s test test-deps unit lint bench demo demo-python demo-node clean install k8s-up k8s-down k8s-smoke

all: build

# The binary must be static: it is also the in-container executor.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/agentbox

# Builds agentbox/base:latest from the embedded Dockerfile; bootstraps the
# Debian base from Debian packages when it cannot be pulled. If that needs
# debootstrap and it is missing: installed with apt when running as root,
# else the exact command to run is printed.
image: build
	@$(BIN) image build || { \
	  if command -v debootstrap >/dev/null 2>&1; then exit 1; fi; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "== installing debootstrap (apt-get install -y debootstrap), then building again"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null && $(BIN) image build; \
	  else \
	    echo "== the base image must be bootstrapped from Debian packages, which needs debootstrap and root; run:"; \
	    echo "   sudo apt-get install -y debootstrap && sudo $(BIN) image build && make $(or $(MAKECMDGOALS),image)"; \
	    exit 1; \
	  fi; }

# The toolchain images FROM the base (agentbox/python, node, go, full: apt
# from Debian's mirror), which the toolchain suites of make test run on.
# The engine caches every step: seconds when nothing changed, minutes each
# the first time (see BENCHMARKS.md for build times and sizes).
TOOLCHAIN_IMAGES ?= python node go full
images: image
	@for n in $(TOOLCHAIN_IMAGES); do $(BIN) image build $$n >/dev/null || exit 1; echo "== built agentbox/$$n:latest"; done

# agentbox/k8s:latest for --backend kubernetes: the base image with this
# static binary inside (a pod cannot mount the host's binary). A cluster
# must then import it (make k8s-up does).
image-k8s: image
	$(BIN) image build --executor

# The one test command: unit, real-Docker integration and CLI end-to-end
# tests. A missing engine fails the run (AGENTBOX_REQUIRE_DOCKER=1), and no
# sandbox container may be left behind.
# The gVisor tier (runsc) and the engine-death test (a second, private
# dockerd killed mid-command) are part of it too.
# The Kubernetes suites (contract, hardening, workspace round trip, gc, a
# 10-task batch) run against the local cluster: as root, make test starts it
# (make k8s-up: built once, about 13 minutes on 2 cores, then cached) and
# requires it (a start that fails is retried once from a clean state). Not root: they run only against the cluster KUBECONFIG names.
# Before anything, test-deps installs (as root) and registers what the
# suites need: runsc, podman, e2fsprogs, chromium, debootstrap, tmux.
K8S_REQUIRED := $(shell [ "$$(id -u)" = 0 ] && echo 1 || echo 0)
# One test package at a time (-p 1): the engine suites start sandboxes in
# parallel within a package already, and two such packages at once on a
# 2-core host starved gVisor sentries into CI failures; the run is a few
# minutes longer and no test waits on another package's load.
test: test-deps
	@$(MAKE) --no-print-directory image-k8s images
	@if [ "$(K8S_REQUIRED)" = 1 ]; then K8S_IMAGES='$(K8S_IMAGES)' bash k8s/up.sh || \
	  { echo "== the cluster did not start; clearing its state and starting it once more"; \
	    bash k8s/down.sh && K8S_IMAGES='$(K8S_IMAGES)' bash k8s/up.sh; }; \
	else echo "== not root: the Kubernetes suites run only against the cluster KUBECONFIG names (make k8s-up needs root)"; fi
	AGENTBOX_REQUIRE_DOCKER=1 AGENTBOX_REQUIRE_RUNSC=1 AGENTBOX_ENGINE_DEATH_TEST=1 AGENTBOX_REQUIRE_K8S=$(K8S_REQUIRED) AGENTBOX_BIN=$(BIN) $(GO) test -p 1 -count=1 -timeout 60m ./...
	@left=$$(docker ps -aq --filter label=agentbox.session 2>/dev/null | wc -l); \
	if [ "$$left" != "0" ]; then echo "FAIL: $$left agentbox container(s) left behind"; docker ps -a --filter label=agentbox.session; exit 1; fi; \
	echo "no agentbox containers left behind"
	@if [ "$(K8S_REQUIRED)" = 1 ]; then bash k8s/leftovers.sh; fi

test-deps:
	@bash scripts/test-deps.sh

# Every test that needs no engine, with no engine at all (DOCKER_HOST points
# at nothing, so engine tests skip): about 3 minutes from a cold build
# cache on 2 cores, under a minute warm. Built as the CLI binary the tests
# run is built (CGO_ENABLED=0; GOFLAGS reaches that build too), so the two
# share one compiled dependency graph instead of compiling it twice; no
# debug information (nothing here runs a debugger); vet is make lint's;
# -short: the generative tests run fewer cases than under make test. The
# packages whose tests run longest are named first: go test builds and
# runs in the order given, so their tests run while the rest compiles.
UNIT_FIRST := ./workspace ./sandbox/executor ./cmd/agentbox ./policy ./audit/otlp
unit:
	env -u AGENTBOX_REQUIRE_DOCKER -u AGENTBOX_REQUIRE_K8S AGENTBOX_NO_K8S=1 DOCKER_HOST=unix:///nonexistent/docker.sock CGO_ENABLED=0 GOFLAGS='-buildvcs=false -gcflags=all=-dwarf=false -ldflags=-w' $(GO) test -short -vet=off -count=1 -timeout 10m $(UNIT_FIRST) ./...

# vet, gofmt, staticcheck, import grouping and the package rules
# (internal/layering/rules.go: engine SDKs only in the backends, the
# layers' arrows).
lint:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) tool staticcheck ./...
	$(GO) run ./internal/importcheck/cmd .
	$(GO) run ./internal/layering/cmd .

# With a cluster up (as root, make bench starts the local one), the
# Kubernetes backend is measured beside Docker in the same run.
bench: image-k8s images
	@if [ "$(K8S_REQUIRED)" = 1 ]; then K8S_IMAGES='$(K8S_IMAGES)' bash k8s/up.sh; fi
	AGENTBOX_REQUIRE_DOCKER=1 AGENTBOX_BIN=$(BIN) $(GO) run ./internal/benchreport -o BENCHMARKS.md

# A real session in a real container on a fresh copy of the demo workspace:
# the scripted model (no network, no key) unless OPENAI_API_KEY is set, then
# the audit timeline and its verification.
DEMO_TASK := count the Python files here and write the number to count.txt
DEMO_DIR  ?= .demo
demo: image
	@rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR) && cp -R examples/demo-workspace $(DEMO_DIR)/workspace
	@if [ -n "$$OPENAI_API_KEY" ]; then \
	  echo "== agentbox run (model $${OPENAI_MODEL:-gpt-4o-mini})"; \
	  $(BIN) run --no-memory --workspace $(DEMO_DIR)/workspace --audit $(DEMO_DIR)/audit.jsonl "$(DEMO_TASK)"; \
	else \
	  echo "== agentbox run --script examples/demo.yaml (set OPENAI_API_KEY to use a real model)"; \
	  $(BIN) run --no-memory --workspace $(DEMO_DIR)/workspace --audit $(DEMO_DIR)/audit.jsonl --script examples/demo.yaml "$(DEMO_TASK)"; \
	fi
	@echo "== count.txt in the workspace: $$(cat $(DEMO_DIR)/workspace/count.txt)"
	@echo "== agentbox audit show $(DEMO_DIR)/audit.jsonl"
	@$(BIN) audit show $(DEMO_DIR)/audit.jsonl
	@echo "== agentbox audit verify $(DEMO_DIR)/audit.jsonl"
	@$(BIN) audit verify $(DEMO_DIR)/audit.jsonl

# The python toolchain image and the project's devcontainer: the scripted
# model runs a small project's failing test, fixes the bug and re-runs it.
demo-python: build
	@docker image inspect agentbox/python:latest >/dev/null 2>&1 || $(BIN) image build python
	@rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR) && cp -R examples/python-project $(DEMO_DIR)/workspace
	$(BIN) run --no-memory --devcontainer --workspace $(DEMO_DIR)/workspace --audit $(DEMO_DIR)/audit.jsonl --script examples/python-project.yaml "run the tests and fix the failing one"
	@$(BIN) audit show $(DEMO_DIR)/audit.jsonl | grep -E 'tool_call +execute_bash'

# The node toolchain image: the scripted model installs a small project's
# vendored dependency (npm, offline), runs its failing test with node --test,
# fixes the bug and re-runs it.
demo-node: build
	@docker image inspect agentbox/node:latest >/dev/null 2>&1 || $(BIN) image build node
	@rm -rf $(DEMO_DIR) && mkdir -p $(DEMO_DIR) && cp -R examples/node-project $(DEMO_DIR)/workspace
	$(BIN) run --no-memory --approve allow --devcontainer --workspace $(DEMO_DIR)/workspace --audit $(DEMO_DIR)/audit.jsonl --script examples/node-project.yaml "run the tests and fix the failing one"
	@$(BIN) audit show $(DEMO_DIR)/audit.jsonl | grep -E 'tool_call +execute_bash'

clean:
	rm -rf bin .demo

# A real single-node Kubernetes cluster on loopback for the Kubernetes
# backend (see k8s/README.md): built once from the Go module proxy (cached
# under ~/.cache/agentbox/k8s), started as root; writes .k8s/kubeconfig.
# Re-running it on a running cluster re-imports the images only.
K8S_IMAGES ?= agentbox/k8s:latest agentbox/base:latest
k8s-up: image-k8s
	K8S_IMAGES='$(K8S_IMAGES)' bash k8s/up.sh

# Stops every component, removes pods and state; keeps the build cache.
k8s-down:
	bash k8s/down.sh

# Attach round trip, loopback-only network and hardening in a real pod,
# under runc and (when runsc is installed) under gVisor.
k8s-smoke:
	bash k8s/smoke.sh
	@if [ -x /usr/bin/runsc ]; then SMOKE_RUNTIME_CLASS=gvisor bash k8s/smoke.sh; fi

# The binary, shell completion (bash, zsh, fish) and the man page, all
# generated from the CLI definition. PREFIX=/usr/local, DESTDIR for packages.
PREFIX ?= /usr/local
install: build
	install -D -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/agentbox
	$(BIN) completion bash | install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/bash-completion/completions/agentbox
	$(BIN) completion zsh  | install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_agentbox
	$(BIN) completion fish | install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/agentbox.fish
	$(BIN) man | install -D -m 0644 /dev/stdin $(DESTDIR)$(PREFIX)/share/man/man1/agentbox.1
