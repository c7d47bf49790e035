package hold

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Kind is the command family. It decides the TTL bounds, whether a default
// server exists, and the "kind" field of every event.
type Kind int

const (
	// KindElection is `octostore election …`: a room with a leader.
	KindElection Kind = iota
	// KindLock is `octostore lock …`: a named mutual-exclusion lease.
	KindLock
)

// String is the kind as events and human lines spell it: "election" or
// "lock".
func (k Kind) String() string {
	if k == KindLock {
		return "lock"
	}
	return "election"
}

// maxConfiguredDuration caps every duration flag
// (docs/protocol.md "Constants").
const maxConfiguredDuration = 24 * time.Hour

// ParseDuration parses --acquire-timeout and the three timeouts exactly as the
// upstream CLI does (docs/protocol.md "Local validation"): surrounding
// whitespace is trimmed, the suffix is "ms", "s", "m", "h" or absent (seconds),
// the number is an unsigned decimal integer (one leading '+' allowed, as Rust's
// u64 parser accepts it), and the result may not exceed 24h. The messages quote
// the trimmed input.
func ParseDuration(s string) (time.Duration, error) {
	value := strings.TrimSpace(s)
	number, multiplier := value, uint64(1000)
	// "ms" must be tested before "s": "5ms" also ends in "s".
	switch {
	case strings.HasSuffix(value, "ms"):
		number, multiplier = strings.TrimSuffix(value, "ms"), 1
	case strings.HasSuffix(value, "s"):
		number, multiplier = strings.TrimSuffix(value, "s"), 1000
	case strings.HasSuffix(value, "m"):
		number, multiplier = strings.TrimSuffix(value, "m"), 60_000
	case strings.HasSuffix(value, "h"):
		number, multiplier = strings.TrimSuffix(value, "h"), 3_600_000
	}
	n, ok := parseRustU64(number)
	if !ok {
		return 0, usageError(errInvalidDuration, fmt.Sprintf("invalid duration '%s'", value))
	}
	if n > math.MaxUint64/multiplier {
		return 0, usageError(errInvalidDuration, fmt.Sprintf("duration '%s' is too large", value))
	}
	ms := n * multiplier
	if ms > uint64(maxConfiguredDuration/time.Millisecond) {
		return 0, usageError(errInvalidDuration, fmt.Sprintf("duration '%s' exceeds the 24h maximum", value))
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// parseRustU64 mirrors str::parse::<u64>: ASCII digits only, an optional single
// leading '+', no sign-only or empty input; a value that does not fit is an
// error (and therefore "invalid", not "too large", exactly as upstream).
func parseRustU64(s string) (uint64, bool) {
	digits := strings.TrimPrefix(s, "+")
	if digits == "" {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// ValidateTimeouts enforces that the three timeouts are non-zero
// (docs/protocol.md "Local validation").
func ValidateTimeouts(connect, request, shutdown time.Duration) error {
	if connect == 0 || request == 0 || shutdown == 0 {
		return usageError(errZeroTimeout, "timeouts must be greater than zero")
	}
	return nil
}

// TTL bounds per command family (docs/protocol.md "Local validation").
const (
	electionTTLMin = 5
	electionTTLMax = 300
	lockTTLMin     = 1
	lockTTLMax     = 3600
)

// ValidateTTL checks --ttl against the bounds of kind.
func ValidateTTL(kind Kind, ttl uint32) error {
	lo, hi := uint32(electionTTLMin), uint32(electionTTLMax)
	if kind == KindLock {
		lo, hi = lockTTLMin, lockTTLMax
	}
	if ttl < lo || ttl > hi {
		return usageError(errInvalidTTL, fmt.Sprintf("TTL must be between %d and %d seconds", lo, hi))
	}
	return nil
}

const candidateMessage = "candidate must be 1-64 ASCII letters, digits, '.', '_', ':', or '-', starting with a letter or digit"

// ValidateCandidate checks --candidate (docs/protocol.md "Local validation"):
// 1–64 bytes, ASCII alphanumeric first, then alphanumerics or - _ . : only. The
// CLI is stricter than the server (no '@'), so a value the server would accept
// can still be refused here.
func ValidateCandidate(candidate string) error {
	if len(candidate) == 0 || len(candidate) > 64 || !isASCIIAlnum(candidate[0]) {
		return usageError(errInvalidCandidate, candidateMessage)
	}
	for i := 1; i < len(candidate); i++ {
		c := candidate[i]
		if !isASCIIAlnum(c) && c != '-' && c != '_' && c != '.' && c != ':' {
			return usageError(errInvalidCandidate, candidateMessage)
		}
	}
	return nil
}

func isASCIIAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
