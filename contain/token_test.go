package contain

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The embedded hold's environment never carries the bearer token: an
// OCTOSTORE_TOKEN is handed over on its stdin (OCTOSTORE_TOKEN_FILE=-), and
// one beside a usable OCTOSTORE_TOKEN_FILE is dropped, as the client would
// ignore it.
func TestTokenHandover(t *testing.T) {
	tests := []struct {
		name      string
		env       []string
		wantEnv   []string
		wantToken string
	}{
		{"no token", []string{"A=1"}, []string{"A=1"}, ""},
		{"token in env", []string{"A=1", "OCTOSTORE_TOKEN=sekrit"}, []string{"A=1", "OCTOSTORE_TOKEN_FILE=-"}, "sekrit"},
		{"last one wins", []string{"OCTOSTORE_TOKEN=old", "OCTOSTORE_TOKEN=new"}, []string{"OCTOSTORE_TOKEN_FILE=-"}, "new"},
		{"file wins", []string{"OCTOSTORE_TOKEN_FILE=/run/t", "OCTOSTORE_TOKEN=sekrit"}, []string{"OCTOSTORE_TOKEN_FILE=/run/t"}, ""},
		{"file that is not UTF-8 counts as unset", []string{"OCTOSTORE_TOKEN_FILE=\xff", "OCTOSTORE_TOKEN=sekrit"}, []string{"OCTOSTORE_TOKEN_FILE=-"}, "sekrit"},
		{"token that is not UTF-8 counts as unset", []string{"OCTOSTORE_TOKEN=\xff"}, []string{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, token := tokenHandover(tt.env)
			require.Equal(t, tt.wantEnv, env)
			require.Equal(t, tt.wantToken, token)
		})
	}
}
