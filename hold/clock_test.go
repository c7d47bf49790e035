package hold

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeClock records the order in which the clocks are read and returns
// scripted values so sampling order and arithmetic can be asserted exactly.
type fakeClock struct {
	sched []time.Time
	cont  []int64
	wall  time.Time
	calls []string
	err   error
}

func (f *fakeClock) Scheduler() time.Time {
	f.calls = append(f.calls, "sched")
	v := f.sched[0]
	if len(f.sched) > 1 {
		f.sched = f.sched[1:]
	}
	return v
}

func (f *fakeClock) ContinuousMillis() (int64, error) {
	f.calls = append(f.calls, "cont")
	if f.err != nil {
		return 0, f.err
	}
	v := f.cont[0]
	if len(f.cont) > 1 {
		f.cont = f.cont[1:]
	}
	return v, nil
}

func (f *fakeClock) Wall() time.Time {
	f.calls = append(f.calls, "wall")
	return f.wall
}

var t0 = time.Date(2026, 8, 2, 12, 0, 0, 0, time.UTC)

func TestNowSamplesContinuousFirst(t *testing.T) {
	fc := &fakeClock{sched: []time.Time{t0}, cont: []int64{5000}}
	i, err := Now(fc)
	require.NoError(t, err)
	require.Equal(t, []string{"cont", "sched"}, fc.calls)
	require.Equal(t, Instant{Scheduler: t0, ContinuousMS: 5000}, i)

	boom := errors.New("no clock")
	_, err = Now(&fakeClock{sched: []time.Time{t0}, err: boom})
	require.ErrorIs(t, err, boom)
}

func TestDeadlineArithmetic(t *testing.T) {
	start := Instant{Scheduler: t0, ContinuousMS: 1000}
	d, err := start.After(24 * time.Second)
	require.NoError(t, err)
	require.Equal(t, Deadline{Scheduler: t0.Add(24 * time.Second), ContinuousMS: 25000}, d)

	sub, err := start.After(1500 * time.Microsecond)
	require.NoError(t, err)
	require.EqualValues(t, 1001, sub.ContinuousMS, "continuous part adds floor_ms(d)")

	_, err = Instant{ContinuousMS: 1<<63 - 10}.After(time.Second)
	require.Error(t, err)
	_, err = start.After(-time.Second)
	require.Error(t, err)

	cases := []struct {
		name  string
		sched time.Duration
		cont  int64
		want  time.Duration
	}{
		{"both agree", 10 * time.Second, 11000, 14 * time.Second},
		{"suspend: continuous ran ahead", 10 * time.Second, 21000, 4 * time.Second},
		{"scheduler ahead", 20 * time.Second, 11000, 4 * time.Second},
		{"continuous reached", time.Second, 25000, 0},
		{"continuous passed saturates", time.Second, 99000, 0},
		{"scheduler passed saturates", time.Hour, 1000, 0},
		{"sub-millisecond scheduler remainder", 24*time.Second - 500*time.Microsecond, 1000, 500 * time.Microsecond},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, d.remainingAt(Instant{Scheduler: t0.Add(tc.sched), ContinuousMS: tc.cont}), tc.name)
	}

	fc := &fakeClock{sched: []time.Time{t0.Add(10 * time.Second)}, cont: []int64{11000}}
	rem, err := d.Remaining(fc)
	require.NoError(t, err)
	require.Equal(t, 14*time.Second, rem)
	require.Equal(t, []string{"sched", "cont"}, fc.calls)
	require.False(t, d.Reached(&fakeClock{sched: []time.Time{t0}, cont: []int64{1000}}))
	require.True(t, d.Reached(&fakeClock{sched: []time.Time{t0}, cont: []int64{25000}}))
	require.True(t, d.Reached(&fakeClock{sched: []time.Time{t0}, err: errors.New("x")}), "an unreadable clock proves nothing")

	other := Deadline{Scheduler: t0.Add(30 * time.Second), ContinuousMS: 20000}
	require.Equal(t, Deadline{Scheduler: t0.Add(24 * time.Second), ContinuousMS: 20000}, d.Min(other))
	require.Equal(t, d.Min(other), other.Min(d))
	require.True(t, other.noLaterThan(d))
	require.False(t, d.noLaterThan(other))
}

func TestObserveAuthority(t *testing.T) {
	d := Deadline{Scheduler: t0.Add(24 * time.Second), ContinuousMS: 25000}
	wall := time.Date(2026, 8, 2, 12, 0, 15, 589012345, time.UTC)
	fc := &fakeClock{
		sched: []time.Time{t0.Add(100 * time.Millisecond)},
		cont:  []int64{1050, 1088}, // the budget sample is later than the transferable one
		wall:  wall,
	}
	obs, err := ObserveAuthority(fc, d)
	require.NoError(t, err)
	require.Equal(t, []string{"wall", "cont", "sched", "cont"}, fc.calls)
	require.EqualValues(t, 23900, obs.RemainingMS, "min(23.9 s scheduler, 23.912 s continuous)")
	require.Equal(t, wall, obs.ObservedAt)
	require.EqualValues(t, 1785672015589, obs.ObservedAt.UnixMilli())
	require.EqualValues(t, 1050, obs.ContinuousMS)

	// A sub-millisecond remainder floors to zero: no event, uncertain.
	fc = &fakeClock{sched: []time.Time{t0.Add(24*time.Second - 500*time.Microsecond)}, cont: []int64{1000}, wall: wall}
	_, err = ObserveAuthority(fc, d)
	require.ErrorIs(t, err, ErrBudgetExhausted)
	fc = &fakeClock{sched: []time.Time{t0}, cont: []int64{1000, 25000}, wall: wall}
	_, err = ObserveAuthority(fc, d)
	require.ErrorIs(t, err, ErrBudgetExhausted)
}

func TestSystemClock(t *testing.T) {
	var c Clock = SystemClock{}
	a, err := Now(c)
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond)
	b, err := Now(c)
	require.NoError(t, err)
	require.GreaterOrEqual(t, b.ContinuousMS, a.ContinuousMS+4)
	require.True(t, b.Scheduler.After(a.Scheduler))
	d, err := a.After(time.Hour)
	require.NoError(t, err)
	rem, err := d.Remaining(c)
	require.NoError(t, err)
	require.Greater(t, rem, 59*time.Minute)
	require.WithinDuration(t, time.Now(), c.Wall(), time.Second)
}

func TestGuidedWaitDelay(t *testing.T) {
	cases := []struct {
		g    uint64
		bp   uint32
		want time.Duration
	}{
		{14000, 1000, 15400 * time.Millisecond},
		{14000, 0, 14 * time.Second},
		{12919, 1000, 14210*time.Millisecond + 900*time.Microsecond}, // prints retry_after_ms 14210
		{30000, 582, 31746 * time.Millisecond},
		{0, 0, 100 * time.Millisecond},
		{0, 1000, 110 * time.Millisecond},
		{1, 500, 105 * time.Millisecond},
		{99, 0, 100 * time.Millisecond},
		{100, 0, 100 * time.Millisecond},
		{101, 0, 101 * time.Millisecond},
		{300000, 0, 300 * time.Second},
		{300000, 1000, 330 * time.Second}, // never capped at 30 s
		{400000, 0, 300 * time.Second},
		{1 << 63, 0, 300 * time.Second},
		{1000, 5000, 1100 * time.Millisecond}, // jitter above 1000 bp is clamped
	}
	for _, tc := range cases {
		got := guidedWaitDelay(tc.g, tc.bp)
		require.Equal(t, tc.want, got, "g=%d bp=%d", tc.g, tc.bp)
		require.GreaterOrEqual(t, got, min(guidanceBase(tc.g), got), "never below guidance")
	}
	require.EqualValues(t, 14210, guidedWaitDelay(12919, 1000).Milliseconds())
}

func TestBackoffWaitDelay(t *testing.T) {
	want := []time.Duration{500, 1000, 2000, 4000, 8000, 16000, 16000, 16000}
	for n, w := range want {
		require.Equal(t, w*time.Millisecond, BackoffWaitDelay(uint32(n), 0), "attempt %d", n)
	}
	require.Equal(t, 550*time.Millisecond, BackoffWaitDelay(0, 1000))
	require.Equal(t, 8800*time.Millisecond, BackoffWaitDelay(4, 1000))
	require.Equal(t, 17600*time.Millisecond, BackoffWaitDelay(5, 1000))
	require.Equal(t, 17600*time.Millisecond, BackoffWaitDelay(1<<31, 1000))
	require.Equal(t, 4400*time.Millisecond, BackoffWaitDelay(3, 1000))
	require.Equal(t, 2050*time.Millisecond, BackoffWaitDelay(2, 250))

	require.Equal(t, 2*time.Second, waitDelay(nil, 2, 0))
	require.Equal(t, 2*time.Second, waitDelay(&Failure{Code: "internal_error"}, 2, 0))
	require.Equal(t, 33*time.Second, waitDelay(&Failure{Code: "rate_limited", RetryAfterMS: 30000}, 2, 1000))
}

func TestRenewalSchedule(t *testing.T) {
	start := Instant{Scheduler: t0, ContinuousMS: 1000}
	cases := []struct {
		ttl        time.Duration
		g          uint64
		bp         uint32
		renewAfter time.Duration
		safety     time.Duration
	}{
		{30 * time.Second, 15000, 0, 15 * time.Second, 24 * time.Second},
		{30 * time.Second, 15000, 1000, 13500 * time.Millisecond, 24 * time.Second},
		{30 * time.Second, 60000, 0, 15 * time.Second, 24 * time.Second}, // capped at T/2
		{30 * time.Second, 0, 1000, 90 * time.Millisecond, 24 * time.Second},
		{120 * time.Second, 60000, 500, 57 * time.Second, 96 * time.Second},
		{5 * time.Second, 2500, 0, 2500 * time.Millisecond, 4 * time.Second},
		{1 * time.Second, 0, 0, 100 * time.Millisecond, 800 * time.Millisecond},
		{1 * time.Second, 5000, 0, 500 * time.Millisecond, 800 * time.Millisecond},
		{3600 * time.Second, 1800000, 0, 300 * time.Second, 2880 * time.Second}, // guidance clamp 300 000 ms
	}
	for _, tc := range cases {
		renewAt, safety, err := RenewalSchedule(start, tc.ttl, tc.g, tc.bp)
		require.NoError(t, err)
		require.Equal(t, t0.Add(tc.renewAfter), renewAt.Scheduler, "ttl=%v g=%d bp=%d", tc.ttl, tc.g, tc.bp)
		require.Equal(t, 1000+tc.renewAfter.Milliseconds(), renewAt.ContinuousMS)
		require.Equal(t, t0.Add(tc.safety), safety.Scheduler)
		require.Equal(t, 1000+tc.safety.Milliseconds(), safety.ContinuousMS)
	}
	sess, err := sessionConfirmation(start)
	require.NoError(t, err)
	require.Equal(t, Deadline{Scheduler: t0.Add(24 * time.Second), ContinuousMS: 25000}, sess)
}

func TestSafetyAndShutdownBudget(t *testing.T) {
	require.Equal(t, 24*time.Second, SafetyDuration(30*time.Second))
	require.Equal(t, 4*time.Second, SafetyDuration(5*time.Second))
	require.Equal(t, 800*time.Millisecond, SafetyDuration(time.Second))
	require.Equal(t, 2*time.Second, ShutdownBudget(10*time.Second, time.Minute))
	require.Equal(t, time.Second, ShutdownBudget(time.Second, time.Minute))
	require.Equal(t, 300*time.Millisecond, ShutdownBudget(10*time.Second, 300*time.Millisecond))
}

func TestJitterSources(t *testing.T) {
	require.EqualValues(t, 7, FixedJitter(7)())
	var sawLow, sawHigh bool
	for i := 0; i < 20000; i++ {
		bp := RandomJitter()
		require.LessOrEqual(t, bp, uint32(maxJitterBasisPoints))
		sawLow = sawLow || bp < 100
		sawHigh = sawHigh || bp > 900
	}
	require.True(t, sawLow && sawHigh)
}
