package events

// Kind is the coordination primitive a hold works on.
type Kind string

const (
	Election Kind = "election"
	Lock     Kind = "lock"
)

// Hold event names as they appear in the "event" field.
const (
	Waiting   = "waiting"
	Leader    = "leader"
	Acquired  = "acquired"
	Renewed   = "renewed"
	Released  = "released"
	Lost      = "lost"
	Uncertain = "uncertain"
	Error     = "error"
)

// Authority is the safety budget of an authority event. The digit counts are
// kept from the wire because the length limits are part of the contract and a
// value too long for uint64 must still reach Fresh (as doubt, exit 20) rather
// than fail parsing (exit 70); such values are saturated to the uint64 maximum.
type Authority struct {
	RemainingMs          uint64
	ObservedUnixMs       uint64
	ObservedContinuousMs uint64

	RemainingDigits          int
	ObservedUnixDigits       int
	ObservedContinuousDigits int
}

// NewAuthority builds an Authority whose digit counts match the values, for
// callers that did not read it off the wire.
func NewAuthority(remainingMs, observedUnixMs, observedContinuousMs uint64) Authority {
	return Authority{
		RemainingMs:              remainingMs,
		ObservedUnixMs:           observedUnixMs,
		ObservedContinuousMs:     observedContinuousMs,
		RemainingDigits:          decimalLen(remainingMs),
		ObservedUnixDigits:       decimalLen(observedUnixMs),
		ObservedContinuousDigits: decimalLen(observedContinuousMs),
	}
}

// AuthorityFields records which authority_* fields were present and non-null,
// so a partial set on renewed can still be diagnosed.
type AuthorityFields struct {
	Remaining          bool
	ObservedUnix       bool
	ObservedContinuous bool
}

func (f AuthorityFields) all() bool {
	return f.Remaining && f.ObservedUnix && f.ObservedContinuous
}

// Event is one validated hold line. Fields the supervisor does not act on
// (expires_at, retry_after_ms, observed_at, extras) are dropped.
type Event struct {
	Sequence    uint64
	Event       string
	Kind        Kind
	Name        string
	Server      string
	CandidateID *string
	Term        *uint64
	ReasonCode  string
	// FencingKey is the authority's name for the holder's record, given by
	// authorities whose stores can fence on it (etcd: the holder key, whose
	// create revision is the term). Optional; handed to the worker as
	// OCTOSTORE_FENCING_KEY beside OCTOSTORE_FENCING_TERM.
	FencingKey string
	// Authority is nil unless all three authority fields were present.
	Authority        *Authority
	AuthorityPresent AuthorityFields
}

// AuthorityOrDoubt exists for renewed: the reference only notices missing
// timestamps when re-arming fails, which is doubt (exit 20), not a stream error.
func (e Event) AuthorityOrDoubt() (Authority, error) {
	if e.Authority == nil {
		return Authority{}, doubt(msgRenewedNoDeadline)
	}
	return *e.Authority, nil
}

// Terminal reports whether the hold ends with this event; the supervisor stops
// reading after it.
func (e Event) Terminal() bool { return isTerminal(e.Event) }

// StartsAuthority reports whether the event is leader or acquired.
func (e Event) StartsAuthority() bool { return e.Event == Leader || e.Event == Acquired }

func isTerminal(name string) bool {
	switch name {
	case Released, Lost, Uncertain, Error:
		return true
	}
	return false
}

func knownEvent(name string) bool {
	switch name {
	case Waiting, Leader, Acquired, Renewed, Released, Lost, Uncertain, Error:
		return true
	}
	return false
}

// Expect is the coordination target named on the supervisor's command line.
// Candidate is "" for locks.
type Expect struct {
	Kind      Kind
	Name      string
	Candidate string
}

func decimalLen(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}
