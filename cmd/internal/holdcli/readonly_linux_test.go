package holdcli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// readToken is distinctive so that a redaction test can tell it apart from
// any other text.
const readToken = "read-cmd-bearer-7c1e5d"

// lockAuthority is an authority that accepts readToken, and a token file for
// it that passes the owner-only checks.
func lockAuthority(t *testing.T) (url, tokenFile string) {
	t.Helper()
	url = proctest.StartServer(t, bin.authority, "--listen", "127.0.0.1:0", "--token", readToken)
	tokenFile = filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(readToken+"\n"), 0o600))
	return url, tokenFile
}

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// runCLI runs the command in-process (create and status only: they install
// no signal handlers and return).
func runCLI(env map[string]string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runTest(append([]string{"octostore"}, args...), envOf(env), &out, &errb)
	return code, out.String(), errb.String()
}

func requestCount(t *testing.T, url string) int {
	t.Helper()
	var recs []json.RawMessage
	require.NoError(t, json.Unmarshal(control(t, "GET", url+"/__control/requests", ""), &recs))
	return len(recs)
}

// acquireLock takes the lock for "another holder" using the same token.
func acquireLock(t *testing.T, url, name string) {
	t.Helper()
	postOK(t, url+"/locks/"+strings.ReplaceAll(name, "/", "%2F")+"/acquire", readToken, `{"ttl_seconds":60}`)
}

// template turns an expected line into a pattern: <TS> is an AutoSi RFC 3339
// timestamp ending in Z, <TS+> the same ending in +00:00, <N> an unsigned
// integer, <ID> a generated election id, <HOLDER> a holder pseudonym.
func template(s string) *regexp.Regexp {
	p := regexp.QuoteMeta(s)
	frac := `(\.\d{3}|\.\d{6}|\.\d{9})?`
	p = strings.ReplaceAll(p, "<TS>", `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d`+frac+`Z`)
	p = strings.ReplaceAll(p, `<TS\+>`, `\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d`+frac+`\+00:00`)
	p = strings.ReplaceAll(p, "<N>", `(0|[1-9]\d*)`)
	p = strings.ReplaceAll(p, "<ID>", `[A-Za-z0-9_-]{32}`)
	p = strings.ReplaceAll(p, "<HOLDER>", `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	return regexp.MustCompile("^" + p + "$")
}

func TestElectionCreateOutput(t *testing.T) {
	url := authority(t)
	code, out, errb := runCLI(nil, "election", "create", "--server", url)
	require.Equal(t, 0, code, errb)
	require.Empty(t, errb)
	require.Regexp(t, template("authority: "+url+"\nelection: <ID>\ngive every candidate this same ID; do not create one room per candidate\n"), out)

	code, out, errb = runCLI(map[string]string{"OCTOSTORE_URL": url}, "election", "create", "--json")
	require.Equal(t, 0, code, errb)
	m := regexp.MustCompile(`^\{"election_id":"([A-Za-z0-9_-]{32})","campaign_path":"/elections/([^"]+)/campaign","status_path":"/elections/([^"]+)","watch_path":"/elections/([^"]+)/watch"\}\n$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	require.Equal(t, []string{m[1], m[1], m[1]}, m[2:])
}

// Only 201 is a created room: a 200 carrying a perfectly good body is an API
// failure (exit 70), as upstream treats it.
func TestElectionCreateAccepts201Only(t *testing.T) {
	url := authority(t)
	body := `{"election_id":"g15BTc54MStBoX-momDJm6uBhJQKKtqQ","campaign_path":"/elections/g15BTc54MStBoX-momDJm6uBhJQKKtqQ/campaign","status_path":"/elections/g15BTc54MStBoX-momDJm6uBhJQKKtqQ","watch_path":"/elections/g15BTc54MStBoX-momDJm6uBhJQKKtqQ/watch"}`
	for status, text := range map[int]string{200: "200 OK", 202: "202 Accepted"} {
		f, _ := json.Marshal(map[string]any{"route": "create_election", "kind": "error", "status": status, "body": body, "count": 1})
		control(t, "POST", url+"/__control/faults", string(f))
		code, out, errb := runCLI(nil, "election", "create", "--json", "--server", url)
		require.Equal(t, 70, code)
		require.Empty(t, out)
		require.Regexp(t, `^octostore: server returned HTTP `+text+` \(request req_[0-9a-f]{32}\)\n$`, errb)
	}
}

func TestElectionStatusOutput(t *testing.T) {
	url := authority(t)
	var created struct {
		ElectionID string `json:"election_id"`
	}
	require.NoError(t, json.Unmarshal(control(t, "POST", url+"/elections", ""), &created))
	id := created.ElectionID

	code, out, errb := runCLI(nil, "election", "status", id, "--server", url)
	require.Equal(t, 0, code, errb)
	require.Equal(t, id+" · vacant · authority "+url+"\n", out)
	code, out, _ = runCLI(nil, "election", "status", id, "--json", "--server", url)
	require.Equal(t, 0, code)
	require.Equal(t, `{"election_id":"`+id+`","status":"vacant","retry_after_ms":0}`+"\n", out)

	resp, err := http.Post(url+"/elections/"+id+"/campaign", "application/json", strings.NewReader(`{"candidate_id":"agent-a","ttl_seconds":30}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	code, out, _ = runCLI(nil, "election", "status", "--server", url, id)
	require.Equal(t, 0, code)
	require.Regexp(t, template(id+" · leader agent-a · term <N> · expires <TS+> · authority "+url+"\n"), out)
	code, out, errb = runCLI(nil, "election", "status", id, "--json", "--server", url)
	require.Equal(t, 0, code)
	require.Empty(t, errb)
	require.Regexp(t, template(`{"election_id":"`+id+`","status":"leader","leader":{"candidate_id":"agent-a","term":<N>,"expires_at":"<TS>"},"retry_after_ms":<N>}`+"\n"), out)

	// The server refuses a malformed id: an API failure, exit 70.
	code, out, errb = runCLI(nil, "election", "status", "short", "--server", url)
	require.Equal(t, 70, code)
	require.Empty(t, out)
	require.Regexp(t, `^octostore: Invalid input: .* \(request req_[0-9a-f]{32}\)\n$`, errb)
}

func TestLockStatusOutput(t *testing.T) {
	url, tokenFile := lockAuthority(t)
	env := map[string]string{"OCTOSTORE_URL": url, "OCTOSTORE_TOKEN_FILE": tokenFile}

	code, out, errb := runCLI(env, "lock", "status", "repo/x")
	require.Equal(t, 0, code, errb)
	require.Empty(t, errb)
	require.Regexp(t, template("repo/x · free · term <N> · authority "+url+"\n"), out)
	code, out, _ = runCLI(env, "lock", "status", "repo/x", "--json")
	require.Equal(t, 0, code)
	require.Regexp(t, template(`{"expires_at":null,"fencing_token":<N>,"holder_id":null,"metadata":null,"name":"repo/x","status":"free"}`+"\n"), out)

	acquireLock(t, url, "repo/x")
	code, out, _ = runCLI(env, "lock", "status", "repo/x")
	require.Equal(t, 0, code)
	require.Regexp(t, template("repo/x · held · term <N> · authority "+url+"\n"), out)
	code, out, _ = runCLI(env, "lock", "status", "repo/x", "--json")
	require.Equal(t, 0, code)
	require.Regexp(t, template(`{"expires_at":"<TS>","fencing_token":<N>,"holder_id":"<HOLDER>","metadata":null,"name":"repo/x","status":"held"}`+"\n"), out)

	// A server reflecting the bearer token into the status fields: every
	// string value is redacted.
	control(t, "POST", url+"/__control/faults", `{"route":"lock_status","kind":"reflect_token","count":1}`)
	code, out, errb = runCLI(env, "lock", "status", "repo/x", "--json")
	require.Equal(t, 0, code, errb)
	require.Regexp(t, template(`{"expires_at":"<TS>","fencing_token":<N>,"holder_id":"[REDACTED]","metadata":"[REDACTED]","name":"repo/x","status":"held"}`+"\n"), out)
	require.NotContains(t, out+errb, readToken)
}

// Local validation exits 64 before any request reaches the server; election
// read commands carry no capability, so cleartext to any host is not refused.
func TestReadCommandsValidateBeforeRequests(t *testing.T) {
	url, tokenFile := lockAuthority(t)
	loose := filepath.Join(t.TempDir(), "loose")
	require.NoError(t, os.WriteFile(loose, []byte(readToken), 0o644))
	for _, c := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"election", "create", "--server", url, "--shutdown-timeout", "0"}, "timeouts must be greater than zero"},
		{map[string]string{"OCTOSTORE_CA_BUNDLE": "/nonexistent/ca.pem"}, []string{"election", "status", "room-0001", "--server", url}, "could not read OCTOSTORE_CA_BUNDLE"},
		{map[string]string{"OCTOSTORE_CA_BUNDLE": ""}, []string{"election", "watch", "room-0001", "--server", url}, "could not read OCTOSTORE_CA_BUNDLE"},
		{nil, []string{"election", "watch", "room-0001", "--server", url, "--request-timeout", "1.5s"}, "invalid duration '1.5s'"},
		{map[string]string{"OCTOSTORE_URL": url}, []string{"lock", "status", "repo/x"}, "lock commands require OCTOSTORE_TOKEN_FILE or OCTOSTORE_TOKEN"},
		{map[string]string{"OCTOSTORE_URL": url, "OCTOSTORE_TOKEN_FILE": loose}, []string{"lock", "watch", "repo/x"}, "owner-only permissions"},
		// Server and timeouts are checked before the token.
		{map[string]string{"OCTOSTORE_TOKEN_FILE": tokenFile}, []string{"lock", "watch", "repo/x", "--server", url, "--connect-timeout", "0"}, "timeouts must be greater than zero"},
		{map[string]string{"OCTOSTORE_URL": url, "OCTOSTORE_TOKEN_FILE": tokenFile}, []string{"lock", "status", "repo/x", "--json", "--bogus"}, "flag provided but not defined"},
	} {
		code, out, errb := runCLI(c.env, c.args...)
		require.Equal(t, 64, code, "%v: %s", c.args, errb)
		require.Contains(t, errb, c.want, c.args)
		require.Empty(t, out)
	}
	require.Zero(t, requestCount(t, url), "a request was sent before validation finished")

	// 192.0.2.0/24 is TEST-NET-1: never routed, so the connection fails.
	code, _, errb := runCLI(nil, "election", "status", "room-0001", "--server", "http://192.0.2.1:9", "--connect-timeout", "200ms", "--request-timeout", "1s")
	require.Equal(t, 70, code, errb)
	require.NotContains(t, errb, "refusing")
}

func (p *cliProc) line(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		require.True(t, ok, "stdout closed; stderr: %s", p.errb.String())
		return l
	case <-time.After(20 * time.Second):
		t.Fatalf("no snapshot within 20 s; stderr: %s", p.errb.String())
		return ""
	}
}

// signal sends sig and returns the exit status.
func (p *cliProc) signal(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(sig))
	return p.exit(t)
}

// A watch prints two snapshots on connect and ends on SIGINT with 130 and on
// SIGTERM with 143, in either output form.
func TestWatchCommands(t *testing.T) {
	url, tokenFile := lockAuthority(t)
	var created struct {
		ElectionID string `json:"election_id"`
	}
	require.NoError(t, json.Unmarshal(control(t, "POST", url+"/elections", ""), &created))
	id := created.ElectionID
	acquireLock(t, url, "repo/x")
	lockEnv := map[string]string{"OCTOSTORE_URL": url, "OCTOSTORE_TOKEN_FILE": tokenFile}

	for _, c := range []struct {
		name  string
		env   map[string]string
		args  []string
		lines []string
		sig   syscall.Signal
		code  int
	}{
		{"election json SIGINT", nil, []string{"election", "watch", id, "--json", "--server", url},
			[]string{
				`{"schema_version":1,"sequence":1,"event":"snapshot","kind":"election","name":"` + id + `","server":"` + url + `","snapshot":{"election_id":"` + id + `","retry_after_ms":0,"status":"vacant"},"observed_at":"<TS>"}`,
				`{"schema_version":1,"sequence":2,"event":"snapshot","kind":"election","name":"` + id + `","server":"` + url + `","snapshot":{"election_id":"` + id + `","retry_after_ms":0,"status":"vacant"},"observed_at":"<TS>"}`,
			}, syscall.SIGINT, 130},
		{"election human SIGTERM", map[string]string{"OCTOSTORE_URL": url}, []string{"election", "watch", id},
			[]string{"election " + id + " · vacant · authority " + url, "election " + id + " · vacant · authority " + url},
			syscall.SIGTERM, 143},
		{"lock json SIGTERM", lockEnv, []string{"lock", "watch", "repo/x", "--json"},
			[]string{
				`{"schema_version":1,"sequence":1,"event":"snapshot","kind":"lock","name":"repo/x","server":"` + url + `","snapshot":{"expires_at":"<TS>","fencing_token":<N>,"holder_id":"<HOLDER>","metadata":null,"name":"repo/x","status":"held"},"observed_at":"<TS>"}`,
				`{"schema_version":1,"sequence":2,"event":"snapshot","kind":"lock","name":"repo/x","server":"` + url + `","snapshot":{"expires_at":"<TS>","fencing_token":<N>,"holder_id":"<HOLDER>","metadata":null,"name":"repo/x","status":"held"},"observed_at":"<TS>"}`,
			}, syscall.SIGTERM, 143},
		{"lock human SIGINT", lockEnv, []string{"lock", "watch", "repo/x"},
			[]string{"lock repo/x · held · authority " + url, "lock repo/x · held · authority " + url},
			syscall.SIGINT, 130},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := startCLI(t, c.env, c.args...)
			for _, want := range c.lines {
				require.Regexp(t, template(want), p.line(t))
			}
			require.Equal(t, c.code, p.signal(t, c.sig))
			require.Empty(t, p.errb.String())
		})
	}
}
