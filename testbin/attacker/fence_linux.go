package main

import "github.com/octostore-supervisor/supervisor/internal/fencelog"

// fence is the shared log every worker of a test writes its fencing term to:
// a stand-in for a store that fences writes by term (internal/fencelog).
type fence struct {
	path string
	term uint64
	role string
}

// append writes "ok|reject WHAT TERM NS PID ROLE" through fencelog.Append: a
// reject when a higher term was already accepted, which is what a fenced store
// does with a deposed holder's late write. It reports whether the write was
// accepted.
func (f fence) append(what string) (bool, error) {
	return fencelog.Append(f.path, f.term, what, f.role)
}
