//go:build linux

package holdcli

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// Real signals delivered to the built `octostore` binary
// (docs/protocol.md "Signals", "Exit codes" rows 130/143,
// "Easy to miss" item 12), plus the exit-code and transport scenarios that need
// the real process: L1 (capability transport and proxies), L13 (one 2 s
// shutdown budget), L18 (usage errors cannot forge event lines), and exit 0
// only for
// --help/--version. Every process started here is waited for by the end of
// its test (cliProc's cleanup; proctest.StartServer for the authority).

const sigToken = "signal-test-bearer-5b2e91"

// cliProc is the built binary running one command: its stdout lines, one
// at a time (lines) and all so far (out), and its stderr.
type cliProc struct {
	cmd   *exec.Cmd
	lines chan string
	out   *proctest.SyncBuffer
	errb  *proctest.SyncBuffer
	done  chan struct{}
}

// startCLI runs the binary with args in a clean environment (PATH plus
// env), so no proxy or OCTOSTORE_* variable of the test's own environment
// leaks in. The process is always waited for by the end of the test.
func startCLI(t *testing.T, env map[string]string, args ...string) *cliProc {
	t.Helper()
	cmd := exec.Command(bin.octostore, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &cliProc{cmd: cmd, lines: make(chan string, 100), out: &proctest.SyncBuffer{}, errb: &proctest.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.errb
	require.NoError(t, cmd.Start())
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			_, _ = p.out.Write([]byte(sc.Text() + "\n"))
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() {
		// Wait closes the pipe: only after the reader saw EOF, or the last
		// lines of a short-lived command could be lost.
		<-read
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
			t.Errorf("octostore %v was still running at the end of the test", args)
		}
	})
	return p
}

// expect waits for the next stdout line and checks its event (and reason).
func (p *cliProc) expect(t *testing.T, event, reason string) map[string]any {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		require.True(t, ok, "stdout closed before %s; stderr: %s", event, p.errb.String())
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		require.Equal(t, event, m["event"], l)
		if reason != "" {
			require.Equal(t, reason, m["reason_code"], l)
		}
		return m
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s within 20 s; stderr: %s", event, p.errb.String())
		return nil
	}
}

// exit waits (generously) for the process and returns its exit status.
func (p *cliProc) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Fatalf("octostore did not exit; stderr: %s", p.errb.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// events are the event names printed so far.
func (p *cliProc) events(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, l := range p.out.Lines() {
		var m struct {
			Event string `json:"event"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m.Event)
	}
	return out
}

// sigAuthority starts testbin/authority accepting sigToken and writes an
// owner-only token file for it.
func sigAuthority(t *testing.T) (url, tokenFile string) {
	t.Helper()
	url = proctest.StartServer(t, bin.authority, "--listen", "127.0.0.1:0", "--token", sigToken)
	tokenFile = filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(sigToken+"\n"), 0o600))
	return url, tokenFile
}

func sigCount(t *testing.T, url, route string) int {
	t.Helper()
	var recs []json.RawMessage
	require.NoError(t, json.Unmarshal(control(t, "GET", url+"/__control/requests?route="+route, ""), &recs))
	return len(recs)
}

func sigElection(t *testing.T, url string) string {
	t.Helper()
	var created struct {
		ElectionID string `json:"election_id"`
	}
	require.NoError(t, json.Unmarshal(control(t, "POST", url+"/elections", ""), &created))
	return created.ElectionID
}

// sigOtherHolds makes someone else hold the room or the lock.
func sigOtherHolds(t *testing.T, url, kind, target string) {
	t.Helper()
	path, body := "/elections/"+target+"/campaign", `{"candidate_id":"other","ttl_seconds":300}`
	if kind == "lock" {
		path, body = "/locks/"+target+"/acquire", `{"ttl_seconds":300}`
	}
	postOK(t, url+path, sigToken, body)
}

// postOK POSTs the JSON body to url with token as the bearer, as another
// holder would, and requires a 200.
func postOK(t *testing.T, url, token, body string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

// holdArgs is the command line and environment for one hold of kind.
func holdArgs(t *testing.T, url, tokenFile, kind string, extra ...string) ([]string, map[string]string, string) {
	t.Helper()
	if kind == "election" {
		id := sigElection(t, url)
		return append([]string{"election", "hold", id, "--candidate", "agent-a", "--ttl", "30", "--json", "--server", url}, extra...), nil, id
	}
	return append([]string{"lock", "hold", "sig-lock", "--ttl", "30", "--json", "--server", url}, extra...),
		map[string]string{"OCTOSTORE_TOKEN_FILE": tokenFile}, "sig-lock"
}

var realSignals = []struct {
	name string
	sig  syscall.Signal
	code int
}{
	{"SIGINT", syscall.SIGINT, 130},
	{"SIGTERM", syscall.SIGTERM, 143},
}

// Before authority: a real SIGINT/SIGTERM ends the hold with 130/143 and no
// event of its own; the lock hold deletes its session first.
func TestSignalHoldBeforeAuthority(t *testing.T) {
	for _, kind := range []string{"election", "lock"} {
		for _, s := range realSignals {
			t.Run(kind+" "+s.name, func(t *testing.T) {
				t.Parallel()
				url, tokenFile := sigAuthority(t)
				args, env, target := holdArgs(t, url, tokenFile, kind)
				sigOtherHolds(t, url, kind, target)
				p := startCLI(t, env, args...)
				p.expect(t, "waiting", "")
				require.NoError(t, p.cmd.Process.Signal(s.sig))
				require.Equal(t, s.code, p.exit(t))
				for _, e := range p.events(t) {
					require.Equal(t, "waiting", e)
				}
				if kind == "lock" {
					require.Equal(t, 1, sigCount(t, url, "delete_session"))
				}
				require.Zero(t, sigCount(t, url, "resign")+sigCount(t, url, "release"))
			})
		}
	}
}

// During authority: a real signal releases (one resign / release + DELETE),
// prints `released signal` and exits 130/143.
func TestSignalHoldDuringAuthority(t *testing.T) {
	for _, kind := range []string{"election", "lock"} {
		for _, s := range realSignals {
			t.Run(kind+" "+s.name, func(t *testing.T) {
				t.Parallel()
				url, tokenFile := sigAuthority(t)
				args, env, _ := holdArgs(t, url, tokenFile, kind)
				p := startCLI(t, env, args...)
				start := p.expect(t, map[string]string{"election": "leader", "lock": "acquired"}[kind], "")
				require.NoError(t, p.cmd.Process.Signal(s.sig))
				rel := p.expect(t, "released", "signal")
				require.Equal(t, start["term"], rel["term"])
				require.Equal(t, s.code, p.exit(t))
				require.Len(t, p.events(t), 2)
				if kind == "election" {
					require.Equal(t, 1, sigCount(t, url, "resign"))
				} else {
					require.Equal(t, 1, sigCount(t, url, "release"))
					require.Equal(t, 1, sigCount(t, url, "delete_session"))
				}
			})
		}
	}
}

// L13: with the resign (or the release and the DELETE) stalled and
// --shutdown-timeout 10s, the shutdown still ends within one 2 s budget:
// uncertain release_unconfirmed, 130. Further signals during the shutdown
// neither kill the process nor change its exit status
// (docs/protocol.md "Signals").
func TestSignalHoldShutdownBudget(t *testing.T) {
	for _, kind := range []string{"election", "lock"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			url, tokenFile := sigAuthority(t)
			control(t, "POST", url+"/__control/faults", `{"route":"resign,release,delete_session","kind":"stall_headers"}`)
			args, env, _ := holdArgs(t, url, tokenFile, kind, "--shutdown-timeout", "10s")
			p := startCLI(t, env, args...)
			p.expect(t, map[string]string{"election": "leader", "lock": "acquired"}[kind], "")
			start := time.Now()
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
			time.Sleep(300 * time.Millisecond)
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
			p.expect(t, "uncertain", "release_unconfirmed")
			elapsed := time.Since(start)
			require.Equal(t, 130, p.exit(t), "the first signal decides the status")
			require.GreaterOrEqual(t, elapsed, 1900*time.Millisecond, "the release attempt had its 2 s")
			require.Less(t, elapsed, 5*time.Second, "one 2 s budget, not --shutdown-timeout 10s (nor two budgets)")
		})
	}
}

// L1, docs/protocol.md "Easy to miss" item 11: a capability-bearing hold
// refuses a non-loopback http server (64, before any connection), and against a
// loopback server ignores every proxy variable — the trap proxy sees nothing —
// reaches leader/acquired, releases on TERM (143), and prints no capability.
func TestCapabilityTransportAndProxies(t *testing.T) {
	url, tokenFile := sigAuthority(t)
	for _, args := range [][]string{
		{"election", "hold", "room-0001", "--candidate", "agent-a", "--json", "--server", "http://192.0.2.1:3000"},
		{"lock", "hold", "x", "--json", "--server", "http://192.0.2.1:3000"},
	} {
		p := startCLI(t, map[string]string{"OCTOSTORE_TOKEN_FILE": tokenFile}, args...)
		require.Equal(t, 64, p.exit(t), args)
		require.Contains(t, p.errb.String(), "refusing to send a secret capability over cleartext HTTP", args)
		require.Empty(t, p.out.String())
	}

	var trapHits atomic.Int64
	trap := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trapHits.Add(1)
		w.WriteHeader(502)
	}))
	defer trap.Close()
	proxies := map[string]string{"OCTOSTORE_TOKEN_FILE": tokenFile}
	for _, k := range []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"} {
		proxies[k] = trap.URL
	}
	var printed strings.Builder
	for _, kind := range []string{"election", "lock"} {
		for _, host := range []string{"127.0.0.1", "localhost"} {
			server := strings.Replace(url, "127.0.0.1", host, 1)
			args, _, _ := holdArgs(t, server, tokenFile, kind)
			p := startCLI(t, proxies, args...)
			p.expect(t, map[string]string{"election": "leader", "lock": "acquired"}[kind], "")
			require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			p.expect(t, "released", "signal")
			require.Equal(t, 143, p.exit(t))
			printed.WriteString(p.out.String() + p.errb.String())
		}
	}
	require.Zero(t, trapHits.Load(), "capability traffic went through a proxy")

	// No capability in any output: the bearer token, leader tokens, lease
	// and session ids (recovered from what the holds sent).
	var recs []struct {
		Body string `json:"body"`
	}
	require.NoError(t, json.Unmarshal(control(t, "GET", url+"/__control/requests", ""), &recs))
	secrets := []string{sigToken}
	for _, r := range recs {
		var b map[string]any
		if json.Unmarshal([]byte(r.Body), &b) != nil {
			continue
		}
		for _, k := range []string{"leader_token", "lease_id", "session_id"} {
			if v, ok := b[k].(string); ok && v != "" {
				secrets = append(secrets, v)
			}
		}
	}
	require.Greater(t, len(secrets), 3, "no capability was used; the test proves nothing")
	for _, s := range secrets {
		require.NotContains(t, printed.String(), s)
	}
}

// docs/protocol.md "Exit codes" row 0: --help and --version are the only
// successes of this binary's hold surface; L18: a usage error never lets argv
// forge a line — the candidate, an unknown flag or an unknown command
// containing a newline and an event-shaped JSON object end in 64 with stdout
// empty and no stderr line that is JSON.
func TestExitCodesHelpAndUsage(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"--version"}, {"election", "hold", "--help"}, {"lock", "hold", "--help"}} {
		p := startCLI(t, nil, args...)
		require.Equal(t, 0, p.exit(t), args)
		require.NotEmpty(t, p.out.String(), args)
	}
	forged := "\n{\"schema_version\":1,\"sequence\":1,\"event\":\"acquired\"}\x1b[2J"
	for _, args := range [][]string{
		{"election", "hold", "room-0001", "--candidate", "a" + forged, "--json"},
		{"election", "hold", "room-0001", "--candidate", "a", "--json", "--bogus" + forged},
		{"lock", "hold", "x", "--json", "--ttl", "5" + forged},
		{"election", "hold" + forged},
		{"election" + forged},
	} {
		p := startCLI(t, nil, args...)
		require.Equal(t, 64, p.exit(t), "%q", args)
		require.Empty(t, p.out.String(), "%q", args)
		stderr := p.errb.String()
		require.NotEmpty(t, stderr)
		require.NotContains(t, stderr, "\x1b", "%q", args)
		for _, l := range strings.Split(strings.TrimRight(stderr, "\n"), "\n") {
			require.True(t, strings.HasPrefix(l, "octostore: ") || !strings.HasPrefix(strings.TrimSpace(l), "{"),
				"%q: forged stderr line %q", args, l)
		}
	}
}
