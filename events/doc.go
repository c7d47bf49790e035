// Package events owns the hold JSONL schema, the one definition the project has:
// it parses and validates hold lines one at a time against the stream state, does
// the authority freshness and deadline arithmetic, encodes the supervisor's own
// stdout lines byte for byte, and encodes hold lines (HoldEvent) as the hold
// client prints them.
//
// It is pure on purpose so every rule can be tested with fixed inputs: it must
// not start processes, read clocks (callers pass a Clocks sample taken at
// receipt), or print anything. Errors carry the one-line stderr message and
// wrap ErrInvalid (exit 70) or ErrDoubt (exit 20) so the caller only has to map
// the class to an exit code.
//
// The JSONL schema is a documented contract; this package's Go API is not:
// it is internal to this module, with no compatibility promise.
package events
