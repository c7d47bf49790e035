package events

import "errors"

// The two classes decide the exit code, so every error from this package wraps
// exactly one of them; the caller must not need to inspect messages.
var (
	// ErrInvalid means the hold stream broke the contract: exit 70.
	ErrInvalid = errors.New("invalid hold event stream")
	// ErrDoubt means authority can no longer be trusted: exit 20.
	ErrDoubt = errors.New("authority is in doubt")
)

// failure keeps the human message separate from the class so err.Error() can go
// to stderr verbatim without the sentinel's text prefixed to it.
type failure struct {
	class error
	msg   string
	cause error
}

func (f *failure) Error() string { return f.msg }

func (f *failure) Unwrap() []error {
	if f.cause == nil {
		return []error{f.class}
	}
	return []error{f.class, f.cause}
}

func invalid(msg string) error { return &failure{class: ErrInvalid, msg: msg} }

func doubt(msg string) error { return &failure{class: ErrDoubt, msg: msg} }

// Messages shared between call sites and tests; they mirror the reference
// supervisor's stderr so operators and upstream greps see the same text.
const (
	msgMalformed         = "malformed or unsupported hold event; refusing to continue work"
	msgBadSequence       = "hold event has an invalid sequence"
	msgSequenceStale     = "hold event sequence did not increase"
	msgWrongTarget       = "hold event does not match the expected coordination target"
	msgWrongCandidate    = "hold event does not match the expected election candidate"
	msgLockCandidate     = "lock hold event unexpectedly contains a candidate identity"
	msgLeaderOnLock      = "hold event 'leader' does not belong to a lock hold"
	msgAcquiredOnElect   = "hold event 'acquired' does not belong to an election hold"
	msgAfterTerminal     = "hold event arrived after a terminal event; refusing to continue work"
	msgWaitingAfterStart = "hold returned to waiting after acquisition; stopping worker"
	msgDuplicateStart    = "duplicate authority-start event"
	msgMissingTerm       = "authority event is missing a numeric fencing term"
	msgZeroTerm          = "authority term must be positive"
	msgMissingRemaining  = "authority event is missing a remaining safety budget"
	msgMissingUnix       = "authority event is missing an emission time"
	msgMissingCont       = "authority event is missing a continuous-clock emission time"
	msgRenewedFirst      = "renewed event arrived before authority"
	msgRenewedTerm       = "renewed event changed or omitted the fencing term"
	msgRenewedNoDeadline = "renewed authority could not replace the active deadline"
	msgNotFresh          = "authority event arrived without a fresh safety budget"
	msgNotUsable         = "authority event arrived without a usable remaining safety budget"
	msgBadGrace          = "watchdog TERM grace must be positive"
	msgLineTooLong       = "hold event line is longer than the supported maximum; refusing to continue work"
	msgPartialLine       = "hold event stream ended in the middle of a line; refusing to continue work"
	msgReadFailed        = "hold event stream could not be read"
)
