package hold

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func requireUsage(t *testing.T, err error, class error, msg string) {
	t.Helper()
	require.Error(t, err)
	var ue *UsageError
	require.True(t, errors.As(err, &ue), "want *UsageError, got %T", err)
	require.Equal(t, msg, ue.Error())
	require.Equal(t, ExitUsage, ue.ExitCode())
	require.ErrorIs(t, err, class)
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"5s", 5 * time.Second, ""},
		{"5", 5 * time.Second, ""},
		{"  10s\t", 10 * time.Second, ""},
		{"250ms", 250 * time.Millisecond, ""},
		{"2m", 2 * time.Minute, ""},
		{"1h", time.Hour, ""},
		{"24h", 24 * time.Hour, ""},
		{"86400", 24 * time.Hour, ""},
		{"1440m", 24 * time.Hour, ""},
		{"0", 0, ""},
		{"0ms", 0, ""},
		{"+5s", 5 * time.Second, ""},
		{"007s", 7 * time.Second, ""},
		{"86401", 0, "duration '86401' exceeds the 24h maximum"},
		{"25h", 0, "duration '25h' exceeds the 24h maximum"},
		{" 1441m ", 0, "duration '1441m' exceeds the 24h maximum"},
		{"86400001ms", 0, "duration '86400001ms' exceeds the 24h maximum"},
		{"18446744073709551615", 0, "duration '18446744073709551615' is too large"},
		{"18446744073709551615h", 0, "duration '18446744073709551615h' is too large"},
		{"18446744073709551615ms", 0, "duration '18446744073709551615ms' exceeds the 24h maximum"},
		{"18446744073709551616ms", 0, "invalid duration '18446744073709551616ms'"},
		{"", 0, "invalid duration ''"},
		{"   ", 0, "invalid duration ''"},
		{"s", 0, "invalid duration 's'"},
		{"ms", 0, "invalid duration 'ms'"},
		{"+", 0, "invalid duration '+'"},
		{"++5", 0, "invalid duration '++5'"},
		{"-5s", 0, "invalid duration '-5s'"},
		{"1.5s", 0, "invalid duration '1.5s'"},
		{"5 s", 0, "invalid duration '5 s'"},
		{"5d", 0, "invalid duration '5d'"},
		{"5S", 0, "invalid duration '5S'"},
		{"1h30m", 0, "invalid duration '1h30m'"},
		{"0x10", 0, "invalid duration '0x10'"},
		{"٣s", 0, "invalid duration '٣s'"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if tc.err != "" {
				requireUsage(t, err, errInvalidDuration, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestValidateTimeouts(t *testing.T) {
	require.NoError(t, ValidateTimeouts(time.Millisecond, time.Second, time.Second))
	for _, c := range [][3]time.Duration{{0, 1, 1}, {1, 0, 1}, {1, 1, 0}} {
		requireUsage(t, ValidateTimeouts(c[0], c[1], c[2]), errZeroTimeout, "timeouts must be greater than zero")
	}
}

func TestValidateTTL(t *testing.T) {
	cases := []struct {
		kind Kind
		ttl  uint32
		err  string
	}{
		{KindElection, 5, ""},
		{KindElection, 30, ""},
		{KindElection, 300, ""},
		{KindElection, 4, "TTL must be between 5 and 300 seconds"},
		{KindElection, 301, "TTL must be between 5 and 300 seconds"},
		{KindElection, 0, "TTL must be between 5 and 300 seconds"},
		{KindLock, 1, ""},
		{KindLock, 120, ""},
		{KindLock, 3600, ""},
		{KindLock, 0, "TTL must be between 1 and 3600 seconds"},
		{KindLock, 3601, "TTL must be between 1 and 3600 seconds"},
		{KindLock, 4294967295, "TTL must be between 1 and 3600 seconds"},
	}
	for _, tc := range cases {
		err := ValidateTTL(tc.kind, tc.ttl)
		if tc.err == "" {
			require.NoError(t, err, "%v %d", tc.kind, tc.ttl)
			continue
		}
		requireUsage(t, err, errInvalidTTL, tc.err)
	}
}

func TestValidateCandidate(t *testing.T) {
	long64 := "a123456789012345678901234567890123456789012345678901234567890123"
	require.Len(t, long64, 64)
	ok := []string{"a", "agent-a", "A.b_c:d-e", "0", "9agent", long64}
	bad := []string{"", "-a", "_a", ".a", ":a", "agent@host", "agent a", long64 + "b", "é", "aé", "a/b", "a\n"}
	for _, c := range ok {
		require.NoError(t, ValidateCandidate(c), c)
	}
	for _, c := range bad {
		requireUsage(t, ValidateCandidate(c), errInvalidCandidate,
			"candidate must be 1-64 ASCII letters, digits, '.', '_', ':', or '-', starting with a letter or digit")
	}
}

func TestKindString(t *testing.T) {
	require.Equal(t, "election", KindElection.String())
	require.Equal(t, "lock", KindLock.String())
}
