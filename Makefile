# octostore-supervisor. `make example` runs a supervised example, `make test`
# runs the tests; see README.md.

GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# urfave/cli's man-page and markdown generators (and their blackfriday
# dependency) are never used; leaving them out saves every process of ours
# about 0.25 MB of memory, helpers included (docs/benchmarks.md).
TAGS    := urfave_cli_no_docs
BIN     := bin
CROSS   := linux/amd64 linux/arm64 darwin/arm64 darwin/amd64 windows/amd64

.PHONY: all build check test test-beside-etcd test-default test-e2e-etcd test-process-group cross fuzz bench example demo demo-cluster vet clean test-windows bench-windows windows-bins etcd36 test-systemd-vm

all: build

# The supervisor's binary carries the lean helper image its guardian and shims
# start from (cmd/octostore-helper), and before it the image the embedded hold
# starts from unless its authority is etcd (cmd/octostore-hold, the hold
# client without the etcd client), both appended by internal/tools/bundle (see
# internal/helperimage): one file to install, helpers without the authorities'
# code, a hold without the etcd client's.
# The supervisor is removed first: go build leaves a target alone when its
# build ID is current, and the image appended to it last time would then make
# the bundle step fail (a second `make build` or `make demo` did).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/.octostore-helper ./cmd/octostore-helper
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS),octostore_noetcd -ldflags '$(LDFLAGS)' -o $(BIN)/.octostore-hold ./cmd/octostore-hold
	rm -f $(BIN)/octostore-supervisor
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN)/octostore-supervisor ./cmd/octostore-supervisor
	$(GO) run ./internal/tools/bundle $(BIN)/octostore-supervisor $(BIN)/.octostore-hold $(BIN)/.octostore-helper
	rm -f $(BIN)/.octostore-helper $(BIN)/.octostore-hold
	CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS) -ldflags '$(LDFLAGS)' -o $(BIN)/octostore ./cmd/octostore

# funclen lists functions over 80 lines in non-test code, and one in any
# product package fails vet. The FUNCLEN_WARN_ONLY directories are not
# product: the test programs (testbin/), the test kit and the development
# tools (internal/testkit, internal/tools); theirs are only listed.
# layers checks the import layering on every target system: no package
# imports one of a higher layer, and no product package imports the test kit
# (internal/tools/layers has the table).
FUNCLEN_WARN_ONLY ?= testbin,internal/testkit,internal/tools

vet:
	$(GO) vet ./...
	$(GO) run ./internal/tools/funclen -warn-only '$(FUNCLEN_WARN_ONLY)' ./...
	$(GO) run ./internal/tools/layers
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The contributors' loop while changing code: vet (with the 80-line rule and
# gofmt), then the tests of the packages that need no root, no VM, no Wine and
# no etcd. make test is the whole proof, as CI runs it.
CHECK_PKGS := ./events/ ./hold/ ./hold/local/ ./cmd/internal/holdcli/ ./internal/helperimage/ \
	./internal/testkit/pidfile/ ./platform/procid/ ./internal/testkit/systemdvm/ ./internal/tools/...

check: vet
	$(GO) test -count=1 $(CHECK_PKGS)

# The integration tests run real processes (some as the unprivileged user
# nobody, some inside a pids cgroup), so they want root, as CI has.
# The supervisor's black-box suite (testbin/e2e/supervisor) runs twice: with
# the backend auto picks (cgroup as root on Linux) and with the process-group
# backend. Its tests start real process trees under the race detector; two at
# a time is what CI's 2 cores carry without starving the supervisors they time.
# Its tests on a local etcd cluster (E2E_ETCD_TESTS) mostly wait for leases to
# run out: one after the other with the rest they left CI's two cores two
# thirds idle for eight minutes. So the process-group pass and then the
# Windows tests run beside them, and every other test after them, alone: the
# default pass's escape matrix races a 300-process fork storm with the
# process-group backend, which a loaded machine can lose (it then fails
# closed, exit 70), and four parts at once overloaded CI (docs/benchmarks.md,
# "Test suite"). The parts share no process, port or state directory; each
# one's output is printed whole when it ends.
E2E := ./testbin/e2e/supervisor/
E2E_ETCD_TESTS := ^(TestEtcdFaultMatrix|TestEtcdWatchAfterCompaction|TestEtcdHandovers200Among4Contenders|TestDemoClusterScript)$$

test: vet etcd36
	$(MAKE) -j2 --output-sync=target test-e2e-etcd test-beside-etcd
	$(MAKE) test-default

test-beside-etcd:
	$(MAKE) test-process-group
	$(MAKE) test-windows

test-default:
	$(GO) test -race -count=1 -timeout 40m -parallel 2 -skip '$(E2E_ETCD_TESTS)' ./...

test-e2e-etcd:
	$(GO) test -race -count=1 -timeout 40m -run '$(E2E_ETCD_TESTS)' $(E2E)

test-process-group:
	OCTOSTORE_TEST_CONTAINMENT=process-group $(GO) test -race -count=1 -timeout 25m -parallel 2 $(E2E)

# The systemd-host scenarios alone (test-default runs them too): a
# Debian 12 VM with systemd under qemu runs `make build`'s binaries in every
# start-up mode, then a Debian 13 VM runs them under Podman. Root; the image is built once into /var/cache
# (testbin/e2e/systemdhost, internal/testkit/systemdvm).
test-systemd-vm:
	$(GO) test -count=1 -timeout 40m -v -run '^TestSystemdHost$$' ./testbin/e2e/systemdhost/

# The pinned etcd 3.6 server the etcd tests run against besides Debian's
# etcd (internal/testkit/etcdtest). It is a module of its own (.ci/etcd36), which keeps
# the server's dependencies out of ours; `go install ...@version` cannot build
# it because of the server module's replace directives. Rebuilt only when
# missing or older than its module files; the first build fetches from the
# module proxy and takes minutes on two shared cores.
ETCD36 := $(BIN)/etcd-3.6

etcd36: $(ETCD36)

$(ETCD36): .ci/etcd36/go.mod .ci/etcd36/go.sum .ci/etcd36/main.go
	cd .ci/etcd36 && CGO_ENABLED=0 $(GO) build -trimpath -o $(CURDIR)/$(ETCD36) .

# Build and vet every supported target, also with the test-hook tag the
# black-box tests build the supervisor with.
cross:
	@set -e; for t in $(CROSS); do \
		echo "== $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -trimpath -o /dev/null ./...; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS) -o /dev/null ./...; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -trimpath -tags octostore_testhooks -o /dev/null ./...; \
		GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0 $(GO) build -trimpath -tags $(TAGS),octostore_noetcd -o /dev/null ./cmd/octostore-hold; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet ./...; \
	done

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzStreamNext -fuzztime 30s ./events/

# The Linux teardown table, the etcd authority's table (a local three-member
# cluster of the pinned 3.6), the systemd VM's gate and teardown (indicative:
# software emulation), then the job-teardown table under Wine (bench-windows,
# also a target of its own).
bench: etcd36
	$(GO) test -run '^$$' -bench BenchmarkRenewedLine -benchtime 20000x ./events/
	$(GO) test -run '^$$' -bench BenchmarkTable -benchtime 1x -timeout 20m $(E2E)
	$(GO) test -run '^$$' -bench BenchmarkEtcdTable -benchtime 1x -timeout 20m $(E2E)
	$(GO) test -run '^$$' -bench BenchmarkSystemdVM -benchtime 1x -timeout 20m ./testbin/e2e/systemdhost/
	$(MAKE) bench-windows

# Windows tests run for real under Wine 8 (Debian wine64), in the project's
# own prefix bin/wine-prefix with the ProcessPrng shim that Go 1.22+ needs
# (.ci/wine/setup). No -race: the race detector needs cgo, which a cross
# build has not. The test binaries find the programs they start in
# bin/windows through OCTOSTORE_WIN_BIN, a Windows path (Wine passes the
# environment through and maps / to Z:). Missing wine64 or mingw is an
# error, never a skip.
WINDOWS_TEST_PKGS ?= ./events/ ./platform/ ./internal/testkit/pidfile/ ./testbin/escaper/ ./testbin/fakehold/ ./contain/ $(E2E) \
	./hold/ ./hold/local/ ./cmd/internal/holdcli/ ./cmd/octostore/
WINBIN := $(CURDIR)/$(BIN)/windows
WINE_EXEC := $(CURDIR)/.ci/wine/exec

windows-bins:
	@mkdir -p $(WINBIN)
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -tags $(TAGS) -o $(WINBIN)/octostore-supervisor.exe ./cmd/octostore-supervisor
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -tags $(TAGS) -o $(WINBIN)/octostore.exe ./cmd/octostore
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -o $(WINBIN)/fakehold.exe ./testbin/fakehold
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -o $(WINBIN)/escaper.exe ./testbin/escaper
	GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $(GO) build -o $(WINBIN)/authority.exe ./testbin/authority

test-windows: windows-bins
	.ci/wine/setup
	OCTOSTORE_WIN_BIN='Z:$(subst /,\,$(WINBIN))' GOOS=windows GOARCH=amd64 \
		$(GO) test -count=1 -timeout 25m -exec $(WINE_EXEC) $(WINDOWS_TEST_PKGS)

# Job teardown of 1, 100 and 500 processes, timed under Wine.
bench-windows:
	.ci/wine/setup
	@echo "== job teardown under Wine: figures are indicative only (Wine's server, not the Windows kernel, kills the job)"
	GOOS=windows GOARCH=amd64 $(GO) test -run '^$$' -bench BenchmarkJobTeardown -benchtime 1x -timeout 30m -exec $(WINE_EXEC) ./platform/

# Two supervised agents on the host-local authority, offline: one leads, the
# other waits; the leader's hold is killed, and its worker tree is proven gone
# before the second agent's worker starts (demo.sh prints the timestamps).
demo: build
	./demo.sh

# The same two agents on a three-member etcd cluster of their own on loopback
# (etcd on PATH, else bin/etcd-3.6 from `make etcd36`): the cluster's leader
# member is killed (the holds retry a renewal, nothing else happens), then the
# leading agent's hold; its lease lapses after the TTL, long after its worker's
# tree was proven gone (demo-cluster.sh prints the timestamps).
demo-cluster: build
	./demo-cluster.sh

# A supervised example: a worker that daemonizes a grandchild runs under an
# election leader; when the hold reports the loss, the whole tree is killed and
# proven gone before "lost" is printed.
example: build
	@CGO_ENABLED=0 $(GO) build -o $(BIN)/fakehold ./testbin/fakehold
	@CGO_ENABLED=0 $(GO) build -o $(BIN)/escaper ./testbin/escaper
	./example.sh

clean:
	rm -rf $(BIN)
