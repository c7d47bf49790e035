// Package etcd is the hold's authority on an etcd v3 cluster
// (`--server etcd://HOST:PORT[,HOST:PORT…][/PREFIX]` or `etcds://…`), one
// more implementation of hold.Authority. It prints the same JSONL events,
// budgets and exit codes as the HTTP authority; only the way authority is
// won and proven differs. Its API is internal to this module, with no
// compatibility promise.
//
// It is built on raw lease, txn and watch calls, never on
// client/v3/concurrency: a concurrency.Session's deadline is its receipt time
// plus the TTL (later than the server's expiry) and Election.Campaign can
// report a leader without re-reading its own key. The key layout is the
// concurrency package's, so `etcdctl elect -l` and `etcdctl lock` observe and
// interoperate:
//
//	<prefix>/election/<id>/<lease %x>             value: the candidate id
//	<prefix>/lock/<percent-encoded name>/<lease %x>   value: empty
//
// Invariants (/work/shared/spec/etcd-authority.md, each has a test):
//
//  1. The term is our key's create revision > 0, constant while held,
//     strictly increasing across holders.
//  2. Authority only after a linearizable read shows our key with that term
//     and no older key, and with at least half of the budget of the renewal
//     before it left (a failed renewal is never taken for one).
//  3. The authority deadline D is the send time of the last confirmed renewal
//     + 0.8 × min(requested, granted TTL), on both clocks; a renewal counts
//     only if keepalive returned TTL > 0 and a following Get still finds our
//     key with our term.
//  4. Authority never comes from Session.Done, keepalive channels,
//     serializable reads or watches from revision 0.
//  5. Every call carries WithRequireLeader and a deadline no later than the
//     remaining budget (and at most one second per attempt, retried).
//  6. Our key deleted or our lease not found → lost at once; D reached →
//     uncertain; a hold never reacquires.
//  7. The lease is revoked only on SIGTERM/SIGINT after authority (the
//     supervisor sends it once the worker is proven gone); lost and uncertain
//     let the lease lapse. (A candidate that gives up before authority —
//     signal, acquire timeout — revokes its queued lease: nothing was held
//     under it, and successors must not wait behind it.)
//  8. Waiting candidates keep their lease alive and re-check their own key
//     after each change of their predecessor.
//  9. No name's key prefix contains another name's keys: names are
//     percent-encoded, so lock "a" never matches "a/b".
//  10. Safety tolerates a holder clock up to 25 % slower than the etcd
//     leader's; a resumed frozen etcd leader can still cut a lease short, so
//     only the worker's fencing (term = create revision, checked against the
//     holder key) rules out overlap. The own-key watch reports such a cut
//     within milliseconds.
package etcd
