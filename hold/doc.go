// Package hold is what every OctoStore authority shares, and the authority of
// the OctoStore HTTP service itself. It replaces the upstream Rust CLI
// (octostore 0.14.4) and must be indistinguishable from it on the wire, on
// stdout and in its exit status. The facts it relies on are written down in
// docs/protocol.md; comments cite its sections by heading, as
// docs/protocol.md "Local validation".
//
// Authority is the one interface an authority implements: it runs a hold to
// its terminal event (Hold), mints an election ID, reads and watches the
// holder, and names its server. There are three:
//
//   - HTTPAuthority, in this package: the OctoStore HTTP service, built from
//     a Client (NewClient: the 1 MiB response bound, strict path encoding,
//     error-body decoding and the Failure classes, "HTTP client",
//     "Response handling", "Failure classes") and its election and lock
//     state machines ("Election hold", "Lock hold", "Watch");
//   - package hold/local: exclusive file locks in a checked state directory
//     on this host ("Host-local authority");
//   - package hold/etcd: leases, transactions and watches on an etcd v3
//     cluster.
//
// Whatever the authority, two things are written once, here:
//
//   - Waiter (with Await) is the one way a hold waits: until an authority
//     Deadline on both clocks (Clock: scheduler and continuous, "Clocks",
//     "Authority deadline"), racing SIGINT/SIGTERM and the run's context, so
//     no wait of any state machine outlasts authority;
//   - Emitter is the one way a hold prints its JSONL events ("Event
//     envelope"), and SnapshotLine the one way a watch prints a snapshot, so
//     the bytes cannot differ between authorities.
//
// Beside them stand the rules every authority and the CLI apply alike: local
// validation (ParseDuration, ValidateCandidate, ValidateTTL,
// ValidateTimeouts: "Local validation"), server selection and the
// cleartext/loopback capability rules (ResolveServer, ValidateServer:
// "Server selection"), secrets (LoadToken, ReadSecretFile: "Bearer token"),
// the CA bundle (LoadCABundle), the budget arithmetic (SafetyDuration,
// RenewalSchedule, ShutdownBudget, BackoffWaitDelay: "Retry and renewal
// delays") and the exit codes ("Exit codes").
//
// Holds write their JSONL events and "octostore: …" diagnostics to the writers
// they are given; nothing else prints. Usage problems come back as *UsageError
// (exit 64) and API problems as *Failure, so the caller decides what goes to
// stderr and which exit code follows. The package reads no environment
// variables itself: callers pass values (or a LookupEnv) so tests are
// hermetic.
//
// The exported API serves this module's authorities, CLI (cmd/internal/holdcli)
// and supervisor (cmd/octostore-supervisor); it is internal to this module,
// with no compatibility promise.
package hold
