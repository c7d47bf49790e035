// Package proctest is test support shared by the project's integration tests:
// records of the processes a test started (the "PID START [ROLE]" pidfiles that
// testbin/escaper and testbin/fakehold write), liveness that treats zombies and
// recycled pids as dead, pidfd-safe kills, and sweeping orphans back to a test
// process that is the child subreaper, so that a test can prove everything it
// started is dead when it ends.
//
// The one rule it keeps: it never signals a process it cannot prove is the
// recorded one. Every signal goes through platform.ProcReader.Signal, which
// opens a pidfd and only then checks the pid's start time, so a pid recycled
// by an unrelated process is never hit; zombies are reaped only when they are
// this process's own orphans, by their own pid, and never when an exec.Cmd
// started here still owns them. A child that asks to die with the test
// (a parent-death signal) is forked on a thread kept until it is reaped:
// that signal follows the forking thread, and threads end under the tests
// whenever product code abandons a locked one.
//
// Everything that touches processes is Linux-only (files ending in _linux.go):
// only Linux has pidfds and a child subreaper. The pidfile format, the
// synchronized buffer and WaitFor build everywhere.
//
// Internal to this module's tests (Go refuses the import elsewhere); no
// compatibility promise.
package proctest
