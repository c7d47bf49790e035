# octostore-supervisor. `make example` runs a supervised example, `make test`
# runs the tests; see README.md.

GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
BIN     := bin
CROSS   := linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64

.PHONY: all build test cross fuzz bench example vet clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/octostore-supervisor ./cmd/octostore-supervisor
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/octostore ./cmd/octostore

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The integration tests run real processes (some as the unprivileged user
# nobody, some inside a pids cgroup), so they want root, as CI has.
# The contain suite runs twice: with the backend auto picks (cgroup as root on
# Linux) and with the process-group backend.
test: vet
	$(GO) test -race -count=1 -timeout 25m -parallel 4 ./...
	OCTOSTORE_TEST_CONTAINMENT=process-group $(GO) test -race -count=1 -timeout 25m -parallel 4 ./contain/

# Build and vet every supported target.
cross:
	@set -e; for t in $(CROSS); do \
		echo "== $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -trimpath -o /dev/null ./...; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./...; \
	done

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzStreamNext -fuzztime 30s ./events/

bench:
	$(GO) test -run '^$$' -bench BenchmarkTable -benchtime 1x -timeout 20m ./contain/

# A supervised example: a worker that daemonizes a grandchild runs under an
# election leader; when the hold reports the loss, the whole tree is killed and
# proven gone before "lost" is printed.
example: build
	@CGO_ENABLED=0 $(GO) build -o $(BIN)/fakehold ./testbin/fakehold
	@CGO_ENABLED=0 $(GO) build -o $(BIN)/escaper ./testbin/escaper
	./example.sh

clean:
	rm -rf $(BIN)
