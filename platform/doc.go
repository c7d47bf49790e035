// Package platform is the thin operating-system layer under the supervisor: the
// clocks that authority budgets are measured on, process identity read from the
// kernel, signalling that cannot hit a recycled pid, the process attributes
// (child subreaper, non-dumpable, no-new-privileges) the containment design relies
// on, file locks, and on Windows the job-object and console calls that
// golang.org/x/sys/windows lacks; on macOS the process table and kqueue.
//
// It holds no policy: it never decides what to kill or when, and never prints.
// The one place it starts a process is Job.Start on Windows, because a program
// must be created suspended and put in its job before its first instruction.
// Everything called on the teardown path is safe there: none of it forks or execs.
//
// Its exported API serves this module's packages; it is internal to this
// module, with no compatibility promise.
package platform
