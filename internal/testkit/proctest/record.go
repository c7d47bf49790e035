package proctest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/octostore-supervisor/supervisor/internal/testkit/linefile"
)

// Record is one line of a pidfile: a process that recorded itself as it
// started. Pid and Start together name that process for its whole life, since a
// recycled pid comes back with another start time.
type Record struct {
	Pid int
	// Start is the process's start time as the platform package reads it
	// (platform.Proc.StartTicks), written in decimal.
	Start uint64
	// Role is the optional third field ("worker", "daemon", ...); fakehold
	// writes none.
	Role string
}

func (r Record) String() string {
	if r.Role == "" {
		return fmt.Sprintf("pid %d (start %d)", r.Pid, r.Start)
	}
	return fmt.Sprintf("pid %d (%s, start %d)", r.Pid, r.Role, r.Start)
}

// ReadPidfile reads the "PID START [ROLE]" lines of path; a file that does not
// exist yet holds no records. On a malformed line it returns the well-formed
// records together with an error naming the first bad line, so a caller may
// still act on what it can prove.
func ReadPidfile(path string) ([]Record, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read pidfile: %w", err)
	}
	recs, err := parsePidfile(b)
	if err != nil {
		return recs, fmt.Errorf("pidfile %s: %w", path, err)
	}
	return recs, nil
}

func parsePidfile(b []byte) ([]Record, error) {
	return linefile.Parse(b, "PID START [ROLE]", parseLine)
}

func parseLine(l string) (Record, bool) {
	f := strings.Fields(l)
	if len(f) < 2 {
		return Record{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return Record{}, false
	}
	start, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return Record{}, false
	}
	rec := Record{Pid: pid, Start: start}
	if len(f) > 2 {
		rec.Role = f[2]
	}
	return rec, true
}
