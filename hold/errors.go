package hold

import (
	"errors"
	"syscall"
	"unicode"
	"unicode/utf8"
)

// Exit statuses of the upstream CLI (docs/protocol.md "Exit codes"). They are
// constants so later code can map errors without re-deriving numbers.
const (
	ExitOK             = 0
	ExitAcquireTimeout = 11
	ExitLost           = 20
	ExitUsage          = 64
	ExitSoftware       = 70
	ExitSIGINT         = 130
	ExitSIGTERM        = 143
)

// Sentinels for the local-validation failures. Every one of them is reported as
// a *UsageError (exit 64) whose Error() is the exact upstream message; the
// sentinel lets callers and tests tell the classes apart without string matching.
var (
	errInvalidTTL          = errors.New("invalid TTL")
	errInvalidCandidate    = errors.New("invalid candidate")
	errInvalidDuration     = errors.New("invalid duration")
	errZeroTimeout         = errors.New("zero timeout")
	errNoLockServer        = errors.New("no lock server")
	ErrInvalidServerURL    = errors.New("invalid server URL")
	ErrServerCredentials   = errors.New("credentials in server URL")
	ErrServerQuery         = errors.New("query or fragment in server URL")
	ErrServerScheme        = errors.New("unsupported server URL scheme")
	ErrCleartextCapability = errors.New("capability over cleartext HTTP")
	ErrCABundle            = errors.New("unusable OCTOSTORE_CA_BUNDLE")
	ErrToken               = errors.New("unusable bearer token")
)

// UsageError is a local validation failure: the CLI prints "octostore: " +
// Error() on stderr and exits 64 (docs/protocol.md "Local validation"). Class
// is one of the Err* sentinels above; Cause, when present, is the underlying
// error (an I/O error, say) kept for errors.Is/As.
type UsageError struct {
	Msg   string
	Class error
	Cause error
}

// Error is the message, exactly as upstream prints it after "octostore: ".
func (e *UsageError) Error() string { return e.Msg }

// Unwrap exposes both the class sentinel and the cause.
func (e *UsageError) Unwrap() []error {
	errs := []error{e.Class}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// ExitCode is always 64: every local validation failure is a usage error.
func (e *UsageError) ExitCode() int { return ExitUsage }

func usageError(class error, msg string) *UsageError {
	return &UsageError{Msg: msg, Class: class}
}

func usageErrorCause(class error, msg string, cause error) *UsageError {
	return &UsageError{Msg: msg, Class: class, Cause: cause}
}

// osErrorText renders an I/O error the way Rust's io::Error Display does
// ("No such file or directory (os error 2)"), because several upstream messages
// embed it and stderr should match as closely as we can. Go's errno strings are
// the C library strings in lower case, so capitalising the first letter and
// appending the number reproduces glibc's and macOS's text for the usual cases.
// Errors that carry no errno fall back to Go's own text.
func osErrorText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := errno.Error()
		r, size := utf8.DecodeRuneInString(s)
		if r != utf8.RuneError {
			s = string(unicode.ToUpper(r)) + s[size:]
		}
		return s + " (os error " + itoa(uint64(errno)) + ")"
	}
	return err.Error()
}

// invalidUTF8Text is Rust's io::Error text when read_to_string meets bytes that
// are not UTF-8.
const invalidUTF8Text = "stream did not contain valid UTF-8"

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
