// Package contain is the supervisor: the lifecycle that gates a worker on validated
// authority, the guardian process that holds the armed deadline and the containers,
// the shims that root each protected group, and the teardown that kills a whole
// process tree and proves it empty before anything is reported.
//
// It must never print a terminal line before containment is proven, never signal a
// pid that could have been recycled, never fork or exec on the teardown path, and
// never keep lifecycle state anywhere a worker can reach (files, named pipes, the
// environment): state lives in memory and crosses process boundaries only over
// anonymous socketpairs.
//
// Its exported API serves this module's supervisor (cmd/octostore-supervisor)
// and tests; it is internal to this module, with no compatibility promise.
package contain
