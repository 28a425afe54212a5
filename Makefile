# The verbs a user and CI call. `make help` lists them.
GO        ?= go
PKGS      ?= ./...
TESTFLAGS ?= -race -count=1 -timeout 25m

.PHONY: help run test unit bench build vet fmt

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/ringfire
	$(GO) build -o bin/ringfire ./cmd/ringfire

run: ## run one ringfire replica on an embedded etcd (a ring of one)
	$(GO) run ./cmd/ringfire run

test: ## the whole suite under -race, as CI runs it
	$(GO) vet $(PKGS)
	$(GO) test $(TESTFLAGS) $(PKGS)

bench: ## the Go benchmarks (ring, dispatcher, failover)
	$(GO) test -run '^$$' -bench . -benchmem -timeout 30m $(PKGS)

fmt: ## gofmt the tree
	gofmt -w $$(git ls-files '*.go')
