// Command cloneinto is a test attacker (Linux only): `cloneinto DIR PROGRAM ARGS...`
// starts PROGRAM born in the cgroup DIR (clone3 with CLONE_INTO_CGROUP),
// the one way to put a process in another cgroup without writing a cgroup
// file. It prints "cloned PID" and exits 0 when the kernel let it, or
// "refused: ERROR" and exits 1. The started program is left running: the
// test that asked for it proves where it ended up and kills it.
package main
