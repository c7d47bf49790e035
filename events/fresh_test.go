package events

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// atEmission is a receipt sample taken at the instant of emission.
func atEmission() Clocks { return Clocks{WallMs: emitUnix, ContinuousMs: emitCont} }

func after(wallMs, contMs int64) Clocks {
	return Clocks{WallMs: emitUnix + wallMs, ContinuousMs: emitCont + contMs}
}

func budget(remainingMs uint64) Authority { return NewAuthority(remainingMs, emitUnix, emitCont) }

func TestFresh(t *testing.T) {
	tests := []struct {
		name  string
		a     Authority
		now   Clocks
		want  time.Duration
		doubt bool
	}{
		{name: "at emission", a: budget(3000), now: atEmission(), want: 3000 * time.Millisecond},
		{name: "wall age dominates", a: budget(3000), now: after(700, 200), want: 2300 * time.Millisecond},
		{name: "continuous age dominates (wall stepped back)", a: budget(5000), now: after(1000, 2000), want: 3000 * time.Millisecond},
		{name: "one ms left", a: budget(3000), now: after(2999, 0), want: time.Millisecond},
		{name: "max budget", a: budget(300000), now: atEmission(), want: MaxBudget},
		{name: "age equals budget", a: budget(3000), now: after(0, 3000), doubt: true},
		{name: "age beyond budget (C6)", a: budget(1600), now: after(2100, 2100), doubt: true},
		{name: "zero budget", a: budget(0), now: atEmission(), doubt: true},
		{name: "budget above maximum (C4)", a: budget(300001), now: atEmission(), doubt: true},
		{name: "wall emission in the future (C3)", a: budget(3000), now: after(-60000, 0), doubt: true},
		{name: "wall emission 1 ms ahead", a: budget(3000), now: after(-1, 0), doubt: true},
		{name: "continuous emission 1 ms ahead", a: budget(3000), now: after(0, -1), doubt: true},
		{name: "remaining 10 digits on the wire", a: withDigits(budget(3000), 10, 0, 0), now: atEmission(), doubt: true},
		{name: "unix 14 digits on the wire", a: withDigits(budget(3000), 0, 14, 0), now: atEmission(), doubt: true},
		{name: "continuous 16 digits on the wire", a: withDigits(budget(3000), 0, 0, 16), now: atEmission(), doubt: true},
		{name: "limits are inclusive", a: withDigits(budget(3000), 9, 13, 15), now: atEmission(), want: 3000 * time.Millisecond},
		{name: "hand-built values still length-checked", a: Authority{RemainingMs: 3000, ObservedUnixMs: 99999999999999, ObservedContinuousMs: emitCont}, now: Clocks{WallMs: math.MaxInt64, ContinuousMs: emitCont}, doubt: true},
		{name: "saturated wire value", a: Authority{RemainingMs: math.MaxUint64, RemainingDigits: 30, ObservedUnixMs: emitUnix, ObservedContinuousMs: emitCont}, now: atEmission(), doubt: true},
		{name: "receipt clock before the epoch", a: budget(3000), now: Clocks{WallMs: -1, ContinuousMs: emitCont}, doubt: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Fresh(tt.a, tt.now)
			if tt.doubt {
				requireClass(t, err, ErrDoubt, msgNotFresh)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func withDigits(a Authority, r, u, m int) Authority {
	a.RemainingDigits, a.ObservedUnixDigits, a.ObservedContinuousDigits = r, u, m
	return a
}

// TestPlanWorkedExamples pins the reference supervisor's worked examples
// (docs/protocol.md "Budget to deadline"; grace 1 s).
func TestPlanWorkedExamples(t *testing.T) {
	tests := []struct {
		name           string
		remainingMs    uint64
		now            Clocks
		silenceCap     time.Duration
		fireIn, killIn int64 // after receipt
		doubt          bool
		stale          bool
	}{
		{name: "999 refused (C1)", remainingMs: 999, now: atEmission(), doubt: true},
		{name: "1600", remainingMs: 1600, now: atEmission(), fireIn: 350, killIn: 1350},
		{name: "2500 (C11)", remainingMs: 2500, now: atEmission(), fireIn: 1250, killIn: 2250},
		{name: "2600", remainingMs: 2600, now: atEmission(), fireIn: 1350, killIn: 2350},
		{name: "3500", remainingMs: 3500, now: atEmission(), fireIn: 2250, killIn: 3250},
		{name: "4000", remainingMs: 4000, now: atEmission(), fireIn: 2750, killIn: 3750},
		{name: "lock 23000 capped at 2 s (C12)", remainingMs: 23000, now: atEmission(), silenceCap: 2 * time.Second, fireIn: 2000, killIn: 3000},
		{name: "5000 with wall age 1 s, continuous age 2 s (C9)", remainingMs: 5000, now: after(1000, 2000), fireIn: 1750, killIn: 2750},
		{name: "smallest usable budget 1350", remainingMs: 1350, now: atEmission(), fireIn: 100, killIn: 1100},
		{name: "1349 leaves 99 ms", remainingMs: 1349, now: atEmission(), doubt: true},
		{name: "fresh budget equal to reserve", remainingMs: 1250, now: atEmission(), doubt: true},
		{name: "usable budget aged below the window", remainingMs: 1600, now: after(251, 0), doubt: true},
		{name: "cap below the work window", remainingMs: 23000, now: atEmission(), silenceCap: 50 * time.Millisecond, doubt: true},
		{name: "cap above the delay is inert", remainingMs: 1600, now: atEmission(), silenceCap: 20 * time.Second, fireIn: 350, killIn: 1350},
		{name: "long election budget (C13)", remainingMs: 300000, now: atEmission(), fireIn: 298750, killIn: 299750},
		{name: "stale budget is a freshness failure", remainingMs: 1600, now: after(1600, 0), stale: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := budget(tt.remainingMs)
			d, err := Plan(a, tt.now, time.Second, tt.silenceCap)
			switch {
			case tt.stale:
				requireClass(t, err, ErrDoubt, msgNotFresh)
			case tt.doubt:
				requireClass(t, err, ErrDoubt, msgNotUsable)
			default:
				require.NoError(t, err)
				require.Equal(t, Deadline{FireMs: tt.now.ContinuousMs + tt.fireIn, KillMs: tt.now.ContinuousMs + tt.killIn}, d)
				// Everything must be dead by the authority's true expiry.
				expiry := int64(a.ObservedContinuousMs + a.RemainingMs)
				require.LessOrEqual(t, d.KillMs+WatchdogReserve.Milliseconds(), expiry)
				require.GreaterOrEqual(t, d.FireMs-tt.now.ContinuousMs, MinWorkWindow.Milliseconds())
			}
		})
	}
}

func TestPlanGrace(t *testing.T) {
	tests := []struct {
		name           string
		grace          time.Duration
		fireIn, killIn int64
		class          error
		msg            string
	}{
		{name: "zero grace", grace: 0, class: ErrInvalid, msg: msgBadGrace},
		{name: "negative grace", grace: -time.Second, class: ErrInvalid, msg: msgBadGrace},
		{name: "two seconds", grace: 2 * time.Second, fireIn: 1750, killIn: 3750},
		{name: "sub-millisecond grace rounds up", grace: 1500 * time.Microsecond, fireIn: 3748, killIn: 3750},
		{name: "grace larger than budget", grace: 10 * time.Second, class: ErrDoubt, msg: msgNotUsable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Plan(budget(4000), atEmission(), tt.grace, 0)
			if tt.class != nil {
				requireClass(t, err, tt.class, tt.msg)
				return
			}
			require.NoError(t, err)
			require.Equal(t, Deadline{FireMs: emitCont + tt.fireIn, KillMs: emitCont + tt.killIn}, d)
		})
	}
}

// TestPlanFromStream runs the C-scenarios end to end through the parser, so the
// split between stream errors (70) and doubt (20) is checked where it matters.
func TestPlanFromStream(t *testing.T) {
	tests := []struct {
		name   string
		expect Expect
		line   string
		now    Clocks
		class  error
		msg    string
	}{
		{name: "C1 lock 999", expect: lockTarget(), line: lk(`"sequence":1,"event":"acquired","term":42,` + auth(999)), now: atEmission(), class: ErrDoubt, msg: msgNotUsable},
		{name: "C2 only remaining", expect: lockTarget(), line: lk(`"sequence":1,"event":"acquired","term":42,"authority_remaining_ms":3000`), now: atEmission(), class: ErrInvalid, msg: msgMissingUnix},
		{name: "C3 future wall", expect: lockTarget(), line: lk(`"sequence":1,"event":"acquired","term":42,` + auth(3000)), now: after(-60000, 0), class: ErrDoubt, msg: msgNotFresh},
		{name: "C4 oversized", expect: lockTarget(), line: lk(`"sequence":1,"event":"acquired","term":42,` + auth(300001)), now: atEmission(), class: ErrDoubt, msg: msgNotFresh},
		{name: "C4 ten digits", expect: lockTarget(), line: lk(`"sequence":1,"event":"acquired","term":42,` + auth(1000000000)), now: atEmission(), class: ErrDoubt, msg: msgNotFresh},
		{name: "C5 strings", expect: lockTarget(), line: lk(`"sequence":1,"event":"acquired","term":42,"authority_remaining_ms":"3000","authority_observed_unix_ms":"1785672015589","authority_observed_continuous_ms":"99500123"`), now: atEmission(), class: ErrInvalid, msg: msgMalformed},
		{name: "over-long unix digits", expect: electionTarget(), line: el(`"sequence":1,"event":"leader","term":7,"authority_remaining_ms":3000,"authority_observed_unix_ms":17856720155890,"authority_observed_continuous_ms":99500123`), now: Clocks{WallMs: math.MaxInt64, ContinuousMs: emitCont}, class: ErrDoubt, msg: msgNotFresh},
		{name: "beyond uint64 continuous", expect: electionTarget(), line: el(`"sequence":1,"event":"leader","term":7,"authority_remaining_ms":3000,"authority_observed_unix_ms":1785672015589,"authority_observed_continuous_ms":99999999999999999999999`), now: atEmission(), class: ErrDoubt, msg: msgNotFresh},
		{name: "usable election", expect: electionTarget(), line: elLeader(1, 7), now: atEmission()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := NewStream(tt.expect).Next([]byte(tt.line))
			if err == nil {
				a, aerr := ev.AuthorityOrDoubt()
				require.NoError(t, aerr)
				_, err = Plan(a, tt.now, time.Second, 0)
			}
			requireClass(t, err, tt.class, tt.msg)
		})
	}
}
