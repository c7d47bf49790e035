package contain

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/events"
)

func TestParseMemoryMax(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  string
	}{
		{"64M", 64 << 20, ""},
		{"64m", 64 << 20, ""},
		{"2048K", 2 << 20, ""},
		{"2G", 2 << 30, ""},
		{"1048576", 1 << 20, ""},
		{"8589934592", 8 << 30, ""},
		{"1023K", 0, `--memory-max "1023K" is below 1M, the least`},
		{"64", 0, "(a bare number is bytes: add K, M or G)"},
		{"", 0, "is not a size"},
		{"M", 0, "is not a size"},
		{"0M", 0, "is not a size"},
		{"-5M", 0, "is not a size"},
		{"+5M", 0, "is not a size"},
		{"1.5G", 0, "is not a size"},
		{"64MB", 0, "is not a size"},
		{"64 M", 0, "is not a size"},
		{"0x100000", 0, "is not a size"},
		{"9223372036854775807G", 0, "too large"},
		{"99999999999999999999", 0, "is not a size"},
	} {
		got, err := ParseMemoryMax(c.in)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
}

func TestParseCPUMax(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
		err  string
	}{
		{"0.5", 500, ""},
		{"2", 2000, ""},
		{"0.25", 250, ""},
		{"1.125", 1125, ""},
		{".5", 500, ""},
		{"0.01", 10, ""},
		{"0.009", 0, "below 0.01 CPU"},
		{"0", 0, "below 0.01 CPU"},
		{"1.0001", 0, "at most three decimals"},
		{"1.", 0, "not a number of CPUs"},
		{"", 0, "not a number of CPUs"},
		{".", 0, "not a number of CPUs"},
		{"-1", 0, "not a number of CPUs"},
		{"1e3", 0, "not a number of CPUs"},
		{"½", 0, "not a number of CPUs"},
		{"0x2", 0, "not a number of CPUs"},
		{"2000", 0, "too large"},
		{"99999999", 0, "too large"},
	} {
		got, err := ParseCPUMax(c.in)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
	}
	for milli, want := range map[int]string{500: "0.5", 2000: "2", 1125: "1.125", 10: "0.01", 250: "0.25"} {
		require.Equal(t, want, formatCPUs(milli))
	}
}

// The terminal line's containment object (events, written by hand) and run's
// summary (encoding/json of Report) name and order the fields alike, so one
// reader serves both; a field added to one and not the other fails here.
func TestTerminalContainmentMatchesRunSummary(t *testing.T) {
	rep := Report{Backend: BackendCgroup, ProvenEmpty: true, Killed: 3, DurationMs: 12, Limit: "",
		CPUMicros: 250000, MemoryPeakBytes: 64 << 20, OOMKills: 4, LimitHit: LimitMemory, Signal: 9}
	want, err := json.Marshal(rep)
	require.NoError(t, err)
	l := events.Line{Event: events.Released, Kind: events.Election, Name: "room", Containment: &events.Containment{
		Backend: rep.Backend, ProvenEmpty: rep.ProvenEmpty, Killed: rep.Killed, DurationMs: rep.DurationMs, Limit: rep.Limit,
		CPUMicros: rep.CPUMicros, MemoryPeakBytes: rep.MemoryPeakBytes, OOMKills: rep.OOMKills, LimitHit: rep.LimitHit, Signal: rep.Signal}}
	line := string(l.Encode())
	_, got, ok := strings.Cut(line, `"containment":`)
	require.True(t, ok, line)
	require.Equal(t, string(want)+"}\n", got)
}
