// Package hold is the Go client for the OctoStore coordination service. It
// replaces the upstream Rust CLI (octostore 0.14.4) and must be
// indistinguishable from it on the wire, on stdout and in its exit status; the
// contract is the project's shared hold-protocol specification
// (shared/spec/hold-protocol.md beside the checkout), and section numbers in
// comments (§4.2, §5.3, …) refer to it.
//
// It holds:
//
//   - local validation (ParseDuration, ValidateCandidate, ValidateTTL), §4.2;
//   - server selection, WHATWG-style normalisation and the cleartext/loopback
//     capability rules (ResolveServer, ValidateServer), §4.3;
//   - bearer token loading from OCTOSTORE_TOKEN_FILE / OCTOSTORE_TOKEN
//     (LoadToken), §4.4;
//   - the HTTP client (NewClient, Client.Call) with its 1 MiB response bound,
//     strict path encoding, error-body decoding and the Failure classes,
//     §5.1–§5.3;
//   - the scheduler/continuous clocks, the two-component authority deadline
//     and the retry/renewal delays with injectable jitter, §6.1–§6.3;
//   - the election and lock holds (ElectionHold, LockHold, §7), status and the
//     SSE watch (§10);
//   - the host-local authority (LocalStore, LocalElectionHold, LocalLockHold):
//     exclusive file locks in a checked state directory, with the same events
//     and budgets. Holder is the interface both authorities' holds implement.
//
// Holds write their JSONL events and "octostore: …" diagnostics to the writers
// they are given; nothing else prints. Usage problems come back as *UsageError
// (exit 64) and API problems as *Failure, so the caller decides what goes to
// stderr and which exit code follows. The package reads no environment variables
// itself: callers pass values (or an os.LookupEnv-shaped function) so tests are
// hermetic.
package hold
