// Package holdcli is the octostore command line: flags, validation order,
// messages, human and --json output, and exit codes of `election
// create|hold|status|watch` and `lock hold|status|watch`. cmd/octostore is only
// its main, and octostore-supervisor's embedded hold re-executes its own binary
// into Main, so both ship one client.
//
// It chooses the authority (an OctoStore server, or the host-local one) and
// wires signals and streams; the protocol and the hold state machines live in
// package hold.
package holdcli
