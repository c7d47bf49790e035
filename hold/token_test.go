package hold

import (
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

func envOf(m map[string]string) LookupEnv {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestLoadTokenSources(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		stdin   string
		want    string
		warning string
		err     string
	}{
		{"env token warns", map[string]string{"OCTOSTORE_TOKEN": "  tok123\n"}, "", "tok123", tokenEnvWarning, ""},
		{"stdin", map[string]string{"OCTOSTORE_TOKEN_FILE": "-", "OCTOSTORE_TOKEN": "other"}, "\u00a0stdin-token\r\n", "stdin-token", "", ""},
		{"stdin empty", map[string]string{"OCTOSTORE_TOKEN_FILE": "-"}, " \n", "", "", "bearer token is empty"},
		{"stdin two lines", map[string]string{"OCTOSTORE_TOKEN_FILE": "-"}, "a\nb\n", "", "", "bearer token must be one line"},
		{"stdin NUL", map[string]string{"OCTOSTORE_TOKEN_FILE": "-"}, "a\x00b", "", "", "bearer token must be one line"},
		{"stdin CR", map[string]string{"OCTOSTORE_TOKEN_FILE": "-"}, "a\rb", "", "", "bearer token must be one line"},
		{"stdin not utf8", map[string]string{"OCTOSTORE_TOKEN_FILE": "-"}, "a\xffb", "", "", "could not read token from stdin: stream did not contain valid UTF-8"},
		{"empty file var takes precedence", map[string]string{"OCTOSTORE_TOKEN_FILE": "", "OCTOSTORE_TOKEN": "tok"}, "", "", "",
			errTokenFileEmpty},
		{"env token empty", map[string]string{"OCTOSTORE_TOKEN": ""}, "", "", tokenEnvWarning, "bearer token is empty"},
		{"env token two lines", map[string]string{"OCTOSTORE_TOKEN": "a\nb"}, "", "", tokenEnvWarning, "bearer token must be one line"},
		{"non-utf8 file var falls through", map[string]string{"OCTOSTORE_TOKEN_FILE": "\xff", "OCTOSTORE_TOKEN": "tok"}, "", "tok", tokenEnvWarning, ""},
		{"nothing", map[string]string{}, "", "", "", "lock commands require OCTOSTORE_TOKEN_FILE or OCTOSTORE_TOKEN"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok, warn, err := LoadToken(envOf(tc.env), strings.NewReader(tc.stdin))
			require.Equal(t, tc.warning, warn)
			if tc.err != "" {
				requireUsage(t, err, ErrToken, tc.err)
				require.Empty(t, tok)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, tok)
		})
	}
}

func TestLoadTokenStdinReadError(t *testing.T) {
	boom := errors.New("boom")
	_, _, err := LoadToken(envOf(map[string]string{"OCTOSTORE_TOKEN_FILE": "-"}), iotest.ErrReader(boom))
	requireUsage(t, err, ErrToken, "could not read token from stdin: boom")
	require.ErrorIs(t, err, boom)
}
