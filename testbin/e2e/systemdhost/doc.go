// Package systemdhost runs the supervisor, built as `make build` builds it,
// on systemd hosts: VMs with systemd as PID 1 and pure cgroup v2
// (internal/testkit/systemdvm). Debian 12 runs every start-up mode users
// have, the limits and the attacks; Debian 13 (kernel 6.12) runs Podman,
// rootful and rootless, around the supervisor (guest/containers.sh). The
// test is systemdhost_linux_test.go, one boot per release; the scenarios are
// shell and Python under guest/, run inside each VM by guest/run.sh, which
// says what each one proves. Run it alone with `make test-systemd-vm`.
package systemdhost
