// Package supervisor holds the black-box tests of the supervisor's binaries:
// they build octostore-supervisor (with its test pause hooks), octostore and
// the test programs under testbin/ from source (harness_linux_test.go's
// TestMain), run them as a user would, and judge what they print and what is
// left alive through the kernel, never through the supervisor's own account.
//
// On Linux the test binary is the child subreaper of everything its tests
// start, and fails the run if anything is still alive at the end. The suite
// runs twice in make test: with the containment auto picks, and with
// OCTOSTORE_TEST_CONTAINMENT=process-group. Its etcd tests run a local
// cluster each (internal/testkit/etcdtest); under Windows the suite runs
// under Wine with the binaries make test-windows builds (harness_windows_test.go).
//
// Package contain keeps its own white-box tests; this package tests only
// what a user of the binaries can see.
package supervisor
