// Package systemd asks the service manager for a cgroup delegated to us, over
// its D-Bus API, where systemd manages the host and has not delegated our own
// cgroup (systemd's docs/CGROUP_DELEGATION.md: never write below a cgroup it
// did not delegate).
//
// Every supervisor of one service manager shares one transient scope with
// Delegate=yes (SharedScope): the system manager's for root, the user
// manager's for anyone else. It is created by the first supervisor that needs
// it, joined by the others, and ends when its last process does. One scope,
// not one per supervisor, so that the runs of supervisors that died stay
// where every later supervisor's start-up sweep and `sweep` look.
//
// Invariants: it moves only this process, and only into SharedScope; it never
// writes a cgroup file itself. It is linked into the supervisor's full binary
// alone (the D-Bus client would weigh on every helper), and is used before the
// run starts.
package systemd
