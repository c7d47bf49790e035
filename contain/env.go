package contain

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// The environments the supervisor hands on. The worker gets the supervisor's
// without the holder's secrets (workerEnv), the hold gets it without its
// bearer token in it where the token can be handed over on its stdin instead
// (tokenHandover, unix). Variable names compare as the platform compares
// them (envKeyEqual: env_unix.go, env_windows.go), so a secret is dropped
// however a Windows environment spells it.

// workerEnv is the supervisor's environment without the holder's secrets and
// without values the supervisor sets itself.
func workerEnv(env []string) []string {
	return withoutVars(env, append([]string{"OCTOSTORE_FENCING_TERM", "OCTOSTORE_FENCING_KEY", "OCTOSTORE_SUPERVISOR_READY_FILE"}, SecretEnv...))
}

// withoutVars is env without the variables named in drop.
func withoutVars(env, drop []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.ContainsFunc(drop, func(d string) bool { return envKeyEqual(k, d) }) {
			out = append(out, kv)
		}
	}
	return out
}

// tokenHandover takes the bearer token out of the hold's environment, where
// /proc/<pid>/environ would show it: the hold reads it from
// its stdin instead (OCTOSTORE_TOKEN_FILE=-, the client's own way of taking a
// token from a pipe). The result is the hold's environment and the token to
// hand over, "" when there is none or OCTOSTORE_TOKEN_FILE already names one
// (the client prefers the file, so OCTOSTORE_TOKEN is just dropped). Values
// that are not UTF-8 count as unset, as they do for the client.
func tokenHandover(env []string) (holdEnv []string, token string) {
	var tok string
	var haveFile, haveTok bool
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case envKeyEqual(k, "OCTOSTORE_TOKEN_FILE") && utf8.ValidString(v):
			haveFile = true
		case envKeyEqual(k, "OCTOSTORE_TOKEN") && utf8.ValidString(v):
			tok, haveTok = v, true
		}
	}
	if haveFile || !haveTok {
		return withoutVars(env, []string{"OCTOSTORE_TOKEN"}), ""
	}
	return append(withoutVars(env, []string{"OCTOSTORE_TOKEN", "OCTOSTORE_TOKEN_FILE"}), "OCTOSTORE_TOKEN_FILE=-"), tok
}
