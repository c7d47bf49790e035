// Package etcdtest runs real etcd clusters for the tests of the etcd
// authority: three members of a real etcd server on loopback, faults injected
// by signals (kill -9, SIGSTOP/SIGCONT, restart), compaction, and a userspace
// TCP proxy in front of each client port that can blackhole or reset
// connections. It also holds the fence-log oracle (FenceLog) the safety tests
// assert with.
//
// Invariants a test may rely on:
//
//   - Every test runs against every server build Servers lists (Debian's etcd
//     and the pinned 3.6 built by `make etcd36`). A missing server fails the
//     test with the command that installs it; nothing is ever skipped.
//   - A cluster never uses the packaged service's ports 2379/2380. Its ports
//     are base+1..3 (clients) and base+11..13 (peers); the base comes from
//     OCTOSTORE_ETCD_PORT_BASE or is picked below the ephemeral port range,
//     probed by binding all six ports while an OFD lock on the base's byte of
//     one shared file keeps other test binaries running at the same time off
//     it for the cluster's life.
//   - Data lives in a fresh directory on /dev/shm, removed at cleanup.
//   - Start returns only when every member reports the same leader and a Put
//     has succeeded; every wait is for a condition, under a generous bound.
//   - At cleanup each member still running gets SIGCONT, then SIGTERM, then
//     SIGKILL after 5 s (followers first: a leader stopping beside stopping
//     followers waits in vain to hand over its leadership), and the test
//     fails unless every process the cluster ever started (restarts
//     included) is proven gone. Members also die with the test binary
//     (PR_SET_PDEATHSIG, forked on a thread kept until the reap: see
//     proctest.StartOwned), so a crashed test leaves nothing.
//   - Member processes are started through proctest.StartOwned, so a Sweep of
//     the test process never reaps them from under their Wait. A Sweep still
//     kills them: in a test that also starts programs with proctest's
//     Binary.Start, whose cleanup sweeps everything below the test process,
//     the members are killed by that sweep before the cluster's own cleanup
//     runs (which then finds them gone, as it must). A cluster shared by
//     several tests must not meet a Sweep while it is needed.
//   - A Member's methods (Kill, Stop, Cont) fail the test that started the
//     cluster; call them from that test's goroutine.
//
// Clusters and members are Linux-only (signals, pids, /dev/shm); the proxy
// and the fence-log checks build everywhere.
//
// Internal to this module's tests (Go refuses the import elsewhere); no
// compatibility promise.
package etcdtest
