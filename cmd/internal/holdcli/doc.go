// Package holdcli is the octostore command line: flags, validation order,
// messages, human and --json output, and exit codes of `election
// create|hold|status|watch` and `lock hold|status|watch`. cmd/octostore is only
// its main, and octostore-supervisor's embedded hold re-executes its own binary
// into Main, so both ship one client.
//
// It chooses the authority once (resolveTarget, target.open: an OctoStore
// server, or the host-local one of package hold/local) and every command then
// calls the hold.Authority it got; HoldFlags is the one validation of a hold's
// flags, shared with the supervisor's embedded hold, and TransportFlags the one
// definition of the flags that choose an authority, shared with the supervisor's
// embedded hold and doctor. SetUsageText writes the usage text of both
// binaries. The protocol and the hold state machines live in package hold and
// its authorities.
//
// Internal to this module (Go refuses the import elsewhere); no compatibility
// promise.
package holdcli
