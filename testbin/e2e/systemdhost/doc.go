// Package systemdhost runs the supervisor, built as `make build` builds it,
// on a systemd host: a Debian 12 VM with systemd as PID 1 and pure cgroup v2
// (internal/testkit/systemdvm), through every start-up mode users have. The
// test is systemdhost_linux_test.go; the scenarios are shell and Python
// under guest/, run inside the VM by guest/run.sh, which says what each one
// proves. Run it alone with `make test-systemd-vm`.
package systemdhost
