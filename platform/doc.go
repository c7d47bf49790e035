// Package platform is the thin operating-system layer under the supervisor: the
// clocks that authority budgets are measured on, process identity read from the
// kernel, signalling that cannot hit a recycled pid, and the process attributes
// (child subreaper, non-dumpable, no-new-privileges) the containment design relies on.
//
// It holds no policy: it never decides what to kill or when, never starts a
// process, and never prints. Every function is safe to call on the teardown path:
// none of them forks or execs.
package platform
