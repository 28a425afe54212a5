# The verbs a user and CI call. `make help` lists them.
GO        ?= go
PKGS      ?= ./...
TESTFLAGS ?= -race -count=1 -timeout 25m
# staticcheck, pinned to one release and fetched through the module proxy: kept out of the
# e2e tools module so that its golang.org/x/tools requirement does not move Kubernetes' pins,
# nor the tools' cache key.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

.PHONY: help dev run test bench-e2e bench-scale unit bench build vet lint fmt tools conformance sidebyside screenshot node-tools node-test node-test-helm kind-test

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# The version `ringfire version` and ringfire_build_info report: the nearest tag, else the commit.
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)

build: ## build bin/ringfire, stamped with $(VERSION)
	$(GO) build -ldflags "-X github.com/ringfire/ringfire/internal/version.stamped=$(VERSION)" -o bin/ringfire ./cmd/ringfire

dev: ## try ringfire: local control plane, fake nodes, 3 replicas, sample jobs (Ctrl-C stops)
	$(GO) run ./cmd/ringfire dev up

run: ## run one ringfire replica on an embedded etcd (a ring of one)
	$(GO) run ./cmd/ringfire run

tools: ## build the pinned e2e binaries (kube-apiserver, etcd, kubectl, kwok, ...) into the cache, and fetch Prometheus
	@e2e/tools/prometheus.sh "$$(e2e/tools/build.sh | tail -n 1)"

.PHONY: crds
crds: ## regenerate deploy/crds/ from the volcano.sh/apis types (controller-gen, then ringfire's CEL rules and defaults)
	$(GO) run ./deploy/crds/gen -controller-gen "$$(e2e/tools/build.sh controller-gen | tail -n 1)/controller-gen"
	$(MAKE) chart

.PHONY: chart
chart: ## copy into charts/ringfire what it takes verbatim from deploy/ (CRDs, admission policies, Queues, RBAC rules, alerts, dashboard)
	rm -rf charts/ringfire/crds charts/ringfire/files/deploy
	mkdir -p charts/ringfire/crds charts/ringfire/files/deploy/crds charts/ringfire/files/deploy/ringfire charts/ringfire/files/deploy/monitoring charts/ringfire/files/deploy/components/gang-scheduler
	cp deploy/crds/*.volcano.sh_*.yaml charts/ringfire/crds/
	cp $$(ls deploy/crds/*.yaml | grep -v -e '\.volcano\.sh_' -e '/kustomization\.yaml$$') charts/ringfire/files/deploy/crds/
	cp deploy/ringfire/10-rbac.yaml charts/ringfire/files/deploy/ringfire/
	cp deploy/components/gang-scheduler/scheduler-rbac.yaml charts/ringfire/files/deploy/components/gang-scheduler/
	cp deploy/monitoring/prometheusrule.yaml deploy/monitoring/grafana-dashboard.json charts/ringfire/files/deploy/monitoring/

lint: ## go vet and staticcheck over the tree
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)

# Where the suites write the permissions their replicas used (e2e/stack), for hack/rbacused.
RBAC_USED ?= $(CURDIR)/.ringfire/rbac-used

test: tools lint ## the whole suite under -race, as CI runs it
	$(GO) test $(TESTFLAGS) -exec /bin/true $(PKGS) >/dev/null # build every test binary, in parallel
	@# one package at a time; Volcano's suites and the mostly waiting packages in a lane beside
	@# them; the ring's timing-bound suites last, alone (e2e/run-suite.sh)
	rm -rf "$(RBAC_USED)"
	@if [ -n "$$VOLCANO_BIN" ] || [ -x ../shared/volcano/unpack.sh ]; then beside=e2e/conformance/ci.sh; \
	else beside=; echo "no Volcano binaries (VOLCANO_BIN, ../shared/volcano): Volcano's suites not run"; fi; \
	RINGFIRE_TOOLS_BIN="$$(e2e/tools/build.sh | tail -n 1)" RINGFIRE_E2E=1 RINGFIRE_RBAC_USED_DIR="$(RBAC_USED)" RINGFIRE_BESIDE_CMD="$$beside" e2e/run-suite.sh $(TESTFLAGS) -- $(PKGS)
	@# Every suite passed: the ClusterRole must grant exactly what their replicas used (a part of the tree proves too little).
	@if [ "$(PKGS)" = "./..." ]; then $(GO) run ./hack/rbacused -dir "$(RBAC_USED)"; else echo "PKGS=$(PKGS): the role is not checked against a part of the suites"; fi

bench: ## the Go benchmarks: slot hashing, assignment, dispatcher, failover, allocation
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m ./shard/ ./controllers/...

bench-e2e: tools ## the end-to-end load benchmark: 1,000 Jobs x 10 pods on 1 and 3 replicas (minutes)
	RINGFIRE_TOOLS_BIN="$$(e2e/tools/build.sh | tail -n 1)" RINGFIRE_E2E=1 $(GO) test -run '^$$' -bench 'JobCreation|BatchJobs|APIServerFloor' -benchtime 1x -timeout 60m ./e2e/bench/

bench-scale: tools ## 10,000 resident Jobs x 10 pods with a steady load through them, on 1, 3, 6 replicas and Volcano (about 90 minutes; docs/benchmarks.md)
	RINGFIRE_TOOLS_BIN="$$(e2e/tools/build.sh | tail -n 1)" RINGFIRE_E2E=1 $(GO) test -run '^$$' -bench BenchmarkScale -benchtime 1x -timeout 180m -v ./e2e/bench/

node-tools: ## build what a real node runs (kubelet, kube-proxy, containerd, CoreDNS, ...) and install its Debian packages (root)
	@e2e/node/build.sh

# How `make node-test` installs ringfire: kustomize (`kubectl apply -k`) or helm (`helm install` of charts/ringfire).
DEPLOY_VIA ?= kustomize

node-test: node-tools ## ringfire deployed on a real kubelet node (root): images built and loaded, deploy/ applied, chaos through kubectl (docs/node.md)
	RINGFIRE_TOOLS_BIN="$$(e2e/node/build.sh | tail -n 1)" RINGFIRE_E2E=1 RINGFIRE_NODE=1 RINGFIRE_DEPLOY_VIA=$(DEPLOY_VIA) \
		$(GO) test -race -count=1 -timeout 30m -v -run TestDeployment ./e2e/deploytest/

node-test-helm: ## the same suite, ringfire installed with `helm install` of charts/ringfire (root; docs/node.md)
	$(MAKE) node-test DEPLOY_VIA=helm

kind-test: ## the deployment suite on kind, with a whole node lost (root): Docker, kind and its node image built here (docs/node.md)
	e2e/kind/run.sh

conformance: tools ## Volcano's own e2e suites against ringfire (Volcano's test binaries in VOLCANO_BIN: docs/conformance.md)
	RINGFIRE_TOOLS_BIN="$$(e2e/tools/build.sh | tail -n 1)" CONFORMANCE_MODES="$(MODES)" e2e/conformance/run.sh $(SUITES)

sidebyside: tools ## the same Jobs under real Volcano and under ringfire, compared (Volcano's programs in VOLCANO_BIN: docs/sidebyside.md)
	mkdir -p .ringfire
	RINGFIRE_TOOLS_BIN="$$(e2e/tools/build.sh | tail -n 1)" RINGFIRE_E2E=1 SIDEBYSIDE_REPORT="$${SIDEBYSIDE_REPORT:-$(CURDIR)/.ringfire/sidebyside.md}" \
		$(GO) test -race -count=1 -timeout 30m -run TestSideBySide -v ./e2e/sidebyside/

screenshot: ## docs/status-page.png: a replica's status page mid-handover on a dev cluster, by headless Chromium (apt-get installs Debian's chromium when missing)
	$(GO) run ./hack/screenshot -out docs/status-page.png

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')
