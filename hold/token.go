package hold

import (
	"io"
	"strings"
	"unicode/utf8"
)

// tokenEnvWarning is printed (by the caller, as "octostore: " + it) when the
// token comes from OCTOSTORE_TOKEN (docs/protocol.md "Bearer token").
const tokenEnvWarning = "warning: OCTOSTORE_TOKEN may be visible to same-user process inspection; prefer OCTOSTORE_TOKEN_FILE"

// LookupEnv has the shape of os.LookupEnv; passing it in keeps LoadToken
// hermetic under test.
type LookupEnv func(key string) (string, bool)

// LoadToken returns the bearer token for lock commands
// (docs/protocol.md "Bearer token"): OCTOSTORE_TOKEN_FILE when set at all (even
// empty; "-" reads stdin to EOF), else OCTOSTORE_TOKEN, in which case warning
// is tokenEnvWarning and the caller must print it before going on, else an
// error. The token is trimmed of Unicode whitespace and must be non-empty and
// one line. Every error is a *UsageError wrapping ErrToken.
//
// A variable whose value is not valid UTF-8 counts as unset, because Rust's
// env::var reports it as an error and the CLI falls through.
func LoadToken(env LookupEnv, stdin io.Reader) (token, warning string, err error) {
	if path, ok := env("OCTOSTORE_TOKEN_FILE"); ok && utf8.ValidString(path) {
		var raw string
		if path == "-" {
			raw, err = readAllUTF8(stdin)
			if err != nil {
				return "", "", usageErrorCause(ErrToken, "could not read token from stdin: "+ioErrorText(err), err)
			}
		} else {
			raw, err = ReadSecretFile(path, "OCTOSTORE_TOKEN_FILE")
			if err != nil {
				return "", "", err
			}
		}
		token, err = validateToken(raw)
		return token, "", err
	}
	if v, ok := env("OCTOSTORE_TOKEN"); ok && utf8.ValidString(v) {
		token, err = validateToken(v)
		return token, tokenEnvWarning, err
	}
	return "", "", usageError(ErrToken, "lock commands require OCTOSTORE_TOKEN_FILE or OCTOSTORE_TOKEN")
}

// TokenConfigured reports whether LoadToken would read a token (rather than
// fail for want of one), without reading it.
func TokenConfigured(env LookupEnv) bool {
	for _, k := range []string{"OCTOSTORE_TOKEN_FILE", "OCTOSTORE_TOKEN"} {
		if v, ok := env(k); ok && utf8.ValidString(v) {
			return true
		}
	}
	return false
}

// ReadSecretFile reads a file that holds a secret (the token file, an etcd
// client key) with the checks the token file gets (docs/protocol.md "Bearer
// token"), all on the opened descriptor so nothing can be swapped in between:
// a regular file reached without following a final symlink, owned by the
// current user and readable by no one else (on Windows, by its ACL). name is
// the variable that named path; every error says it and is a *UsageError
// wrapping ErrToken. The content must be UTF-8.
func ReadSecretFile(path, name string) (string, error) {
	return readSecretFile(path, name)
}

func validateToken(raw string) (string, error) {
	t := strings.TrimSpace(raw)
	if t == "" {
		return "", usageError(ErrToken, "bearer token is empty")
	}
	if strings.ContainsAny(t, "\r\n\x00") {
		return "", usageError(ErrToken, "bearer token must be one line")
	}
	return t, nil
}

// errInvalidUTF8 stands for Rust's InvalidData error from read_to_string.
type errInvalidUTF8 struct{}

func (errInvalidUTF8) Error() string { return invalidUTF8Text }

// readAllUTF8 reads to EOF with no size bound (upstream has none) and refuses
// bytes that are not UTF-8, as read_to_string does.
func readAllUTF8(r io.Reader) (string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", errInvalidUTF8{}
	}
	return string(b), nil
}

func ioErrorText(err error) string {
	if _, ok := err.(errInvalidUTF8); ok {
		return invalidUTF8Text
	}
	return osErrorText(err)
}
