// Package hold is the Go client for the OctoStore coordination service. It
// replaces the upstream Rust CLI (octostore 0.14.4) and must be
// indistinguishable from it on the wire, on stdout and in its exit status. The
// facts it relies on are written down in docs/protocol.md; comments cite its
// sections by heading, as docs/protocol.md "Local validation".
//
// It holds:
//
//   - local validation (ParseDuration, ValidateCandidate, ValidateTTL):
//     "Local validation";
//   - server selection, WHATWG-style normalisation and the cleartext/loopback
//     capability rules (ResolveServer, ValidateServer): "Server selection";
//   - bearer token loading from OCTOSTORE_TOKEN_FILE / OCTOSTORE_TOKEN
//     (LoadToken): "Bearer token";
//   - the HTTP client (NewClient, Client.call) with its 1 MiB response bound,
//     strict path encoding, error-body decoding and the Failure classes:
//     "HTTP client", "Requests", "Response handling", "Failure classes";
//   - the scheduler/continuous clocks, the two-component authority deadline
//     and the retry/renewal delays with injectable jitter: "Clocks",
//     "Authority deadline", "Retry and renewal delays";
//   - the election and lock holds (electionHold, lockHold): "Election hold",
//     "Lock hold"; status and the SSE watch: "Read-only commands", "Watch";
//   - Authority, the interface every authority implements: this package's
//     HTTP holds, the host-local authority (package hold/local: exclusive file
//     locks in a checked state directory, with the same events and budgets,
//     "Host-local authority") and etcd (package hold/etcd).
//
// Holds write their JSONL events and "octostore: …" diagnostics to the writers
// they are given; nothing else prints. Usage problems come back as *UsageError
// (exit 64) and API problems as *Failure, so the caller decides what goes to
// stderr and which exit code follows. The package reads no environment variables
// itself: callers pass values (or an os.LookupEnv-shaped function) so tests are
// hermetic.
package hold
