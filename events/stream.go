package events

// Stream validates the hold lines of one supervisor run. It is not safe for
// concurrent use: one reader owns the hold's stdout.
type Stream struct {
	expect     Expect
	lastSeq    uint64
	term       uint64
	fencingKey string
	active     bool
	ended      bool
	parser     lineDecoder
}

// NewStream starts a stream that expects lines for e.
func NewStream(e Expect) *Stream { return &Stream{expect: e} }

// ActiveTerm returns the fencing term once a leader/acquired was accepted.
func (s *Stream) ActiveTerm() (uint64, bool) { return s.term, s.active }

// LastSequence returns the last accepted sequence, 0 before any; the
// synthesized uncertain line uses it plus one.
func (s *Stream) LastSequence() uint64 { return s.lastSeq }

// Next parses and validates one line (without its newline). State changes only
// when every check passes, so a rejected line leaves the stream as it was.
func (s *Stream) Next(line []byte) (Event, error) {
	if s.ended {
		// A hold is done after a terminal event; anything later (B17's second
		// leader) is not something to act on.
		return Event{}, invalid(msgAfterTerminal)
	}
	w, err := s.parser.decode(line)
	if err != nil {
		return Event{}, err
	}
	seq, err := s.checkSequence(w)
	if err != nil {
		return Event{}, err
	}
	if err := s.checkTarget(w); err != nil {
		return Event{}, err
	}
	ev := eventFrom(w, seq)
	if err := s.checkName(ev.Event); err != nil {
		return Event{}, err
	}
	if err := s.checkTransition(ev); err != nil {
		return Event{}, err
	}
	s.lastSeq = seq
	if ev.StartsAuthority() {
		s.term, s.fencingKey, s.active = *ev.Term, ev.FencingKey, true
	}
	if ev.Terminal() {
		s.ended = true
	}
	return ev, nil
}

func (s *Stream) checkSequence(w wireEvent) (uint64, error) {
	if w.sequence == nil {
		return 0, invalid(msgBadSequence)
	}
	n, ok := digits(w.sequence)
	if !ok || !n.exact {
		return 0, invalid(msgBadSequence)
	}
	if n.value <= s.lastSeq {
		return 0, invalid(msgSequenceStale)
	}
	return n.value, nil
}

func (s *Stream) checkTarget(w wireEvent) error {
	if w.kind == nil || w.name == nil || Kind(*w.kind) != s.expect.Kind || *w.name != s.expect.Name {
		return invalid(msgWrongTarget)
	}
	if s.expect.Kind == Election {
		if w.candidateID == nil || *w.candidateID != s.expect.Candidate {
			return invalid(msgWrongCandidate)
		}
		return nil
	}
	if w.candidateID != nil && *w.candidateID != "" {
		return invalid(msgLockCandidate)
	}
	return nil
}

// checkName also closes the reference's gap (B16): an authority-start event
// of the other kind would otherwise start a worker for the wrong primitive.
func (s *Stream) checkName(name string) error {
	if !knownEvent(name) {
		return invalid("unknown hold event '" + terminalSafe(name) + "'; refusing to continue work")
	}
	if name == Leader && s.expect.Kind == Lock {
		return invalid(msgLeaderOnLock)
	}
	if name == Acquired && s.expect.Kind == Election {
		return invalid(msgAcquiredOnElect)
	}
	return nil
}

func (s *Stream) checkTransition(ev Event) error {
	switch ev.Event {
	case Waiting:
		if s.active {
			return doubt(msgWaitingAfterStart)
		}
	case Leader, Acquired:
		return s.checkStart(ev)
	case Renewed:
		if !s.active {
			return invalid(msgRenewedFirst)
		}
		if ev.Term == nil || *ev.Term != s.term {
			return invalid(msgRenewedTerm)
		}
		if ev.FencingKey != "" && ev.FencingKey != s.fencingKey {
			return invalid("renewed event changed the fencing key")
		}
	case Released, Lost, Uncertain:
		if s.active && (ev.Term == nil || *ev.Term != s.term) {
			return invalid(ev.Event + " event changed the fencing term")
		}
	}
	return nil
}

func (s *Stream) checkStart(ev Event) error {
	switch {
	case s.active:
		return invalid(msgDuplicateStart)
	case ev.Term == nil:
		return invalid(msgMissingTerm)
	case *ev.Term == 0:
		return invalid(msgZeroTerm)
	case !ev.AuthorityPresent.Remaining:
		return invalid(msgMissingRemaining)
	case !ev.AuthorityPresent.ObservedUnix:
		return invalid(msgMissingUnix)
	case !ev.AuthorityPresent.ObservedContinuous:
		return invalid(msgMissingCont)
	}
	return nil
}

func eventFrom(w wireEvent, seq uint64) Event {
	ev := Event{
		Sequence:    seq,
		Event:       deref(w.event),
		Kind:        Kind(deref(w.kind)),
		Name:        deref(w.name),
		Server:      deref(w.server),
		CandidateID: w.candidateID,
		Term:        w.term,
		ReasonCode:  deref(w.reasonCode),
		FencingKey:  deref(w.fencingKey),
		AuthorityPresent: AuthorityFields{
			Remaining:          w.remaining != nil,
			ObservedUnix:       w.unix != nil,
			ObservedContinuous: w.continuous != nil,
		},
	}
	if ev.AuthorityPresent.all() {
		ev.Authority = &Authority{
			RemainingMs:              w.remaining.value,
			ObservedUnixMs:           w.unix.value,
			ObservedContinuousMs:     w.continuous.value,
			RemainingDigits:          w.remaining.digits,
			ObservedUnixDigits:       w.unix.digits,
			ObservedContinuousDigits: w.continuous.digits,
		}
	}
	return ev
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
