// Command octostore is the OctoStore hold client: it holds an election
// leadership (and, later, a lock) and prints the hold's JSONL events that
// octostore-supervisor consumes.
//
// This package is the command line only: flags, validation order, messages and
// exit codes. The protocol and the hold state machines live in package hold.
package main
