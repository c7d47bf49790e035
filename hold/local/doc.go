// Package local is the host-local authority (docs/protocol.md "Host-local
// authority"): `--server local` (a per-user state directory) or
// `--server file:///DIR` (a directory a group may share) decides who holds an
// election or a lock on this host, without a server. Store implements
// hold.Authority, so the CLI and the supervisor's embedded hold treat it like
// the HTTP authority.
//
// Invariants:
//
//   - Authority is an exclusive OS file lock (flock, LockFileEx) on one file
//     per name, taken without waiting and polled; a hold renews by proving
//     that the file it locked is still the one at the path and that the
//     holder record still names it. Lock files are never deleted: unlinking
//     one on release would let a waiter that opened the old file and a
//     newcomer that created a new one both "own" the name.
//   - The state directory is checked once, when opened, and then reached only
//     through an os.Root on what was checked: a symlink, a directory others
//     may write to, one owned by another user (for "local"), one on a network
//     file system (where locks are not reliable) and entries someone else
//     could have planted are refused as a *hold.UsageError (exit 64).
//   - Fencing terms come from one counter for every election and lock of the
//     directory, fsynced before use, and strictly increase across holders and
//     restarts; a counter below a term already issued or a
//     corrupt one stops acquisition rather than repeat a term.
//   - A hold prints the same JSONL events, with the same budget arithmetic
//     and exit codes, as the HTTP holds (election budget 0.8 × TTL; lock
//     budget 0.8 × min(TTL, 30 s)), and waits only through hold.Await, so a
//     hung file system cannot stretch authority.
//   - The interlock (OpenInterlock, OpenSupervised) is what closes the gap
//     between a hold process dying, which hands the lock over at once, and
//     its worker's tree being proven gone: octostore-supervisor locks it
//     before it starts a protected worker and unlocks it only after. The
//     survivor record (SurvivorRecord) names processes that outlived a failed
//     containment; every later supervisor of that authority and name waits
//     until they are gone.
//
// Layout of a state directory:
//
//	term                         the fencing counter (20 digits + "\n"), fsynced
//	elections/<escaped>.lock     flocked by the leader of that room; holds the
//	                             last term issued for the room (as term does)
//	elections/<escaped>.holder   JSON record of the leader, for status and watch
//	elections/<escaped>.active   the room's interlock
//	locks/<escaped>.lock         likewise for locks
//	locks/<escaped>.holder
//	locks/<escaped>.active
//	supervised/<key>.active      interlocks and survivor records of the
//	supervised/<key>.survivors   supervisor (private directories only)
//
// The exported API serves this module's CLI (cmd/internal/holdcli) and
// supervisor (cmd/octostore-supervisor); it is not meant for use outside the
// module: no compatibility promise.
package local
