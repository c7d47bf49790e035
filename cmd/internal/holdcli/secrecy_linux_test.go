package holdcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

var bin struct{ octostore, authority string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "octostore-cli-")
	if err != nil {
		panic(err)
	}
	bin.octostore, bin.authority = filepath.Join(dir, "octostore"), filepath.Join(dir, "authority")
	for _, b := range [][]string{{"-o", bin.octostore, "../../octostore"}, {"-o", bin.authority, "../../../testbin/authority"}} {
		if out, err := proctest.GoBuild(b...).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %v: %v\n%s", b, err, out)
			os.Exit(2)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func authority(t *testing.T) string {
	t.Helper()
	return proctest.StartServer(t, bin.authority, "--listen", "127.0.0.1:0", "--token", "t")
}

func control(t *testing.T, method, url, body string) []byte {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	require.Less(t, resp.StatusCode, 300, "%s %s: %s", method, url, b.String())
	return b.Bytes()
}

// The leader token is the election capability: whoever holds it can renew and
// resign the leadership. Whatever happens - a clean release, an identity
// mismatch that makes the client resign, a stalled renewal - it never reaches
// stdout, stderr or the command line. The real token is recovered from the
// authority's log of the renew and resign bodies the client sent.
func TestLeaderTokenNeverPrinted(t *testing.T) {
	for _, c := range []struct {
		name   string
		fault  string
		signal bool
	}{
		{"released on SIGTERM", "", true},
		{"identity mismatch, resign", `{"route":"campaign","kind":"wrong_candidate","count":1}`, false},
		{"renewal failures then release", `{"route":"election_renew","kind":"error","status":503,"count":2}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := authority(t)
			var created struct {
				ElectionID string `json:"election_id"`
			}
			require.NoError(t, json.Unmarshal(control(t, "POST", url+"/elections", ""), &created))
			if c.fault != "" {
				control(t, "POST", url+"/__control/faults", c.fault)
			}
			cmd := exec.Command(bin.octostore, "election", "hold", created.ElectionID, "--candidate", "agent-a", "--ttl", "5", "--json", "--server", url)
			var out, errb proctest.SyncBuffer // written by exec's copiers while the test polls
			cmd.Stdout, cmd.Stderr = &out, &errb
			require.NoError(t, cmd.Start())
			argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
			if c.signal {
				deadline := time.Now().Add(10 * time.Second)
				for !strings.Contains(out.String(), `"event":"renewed"`) && time.Now().Before(deadline) {
					time.Sleep(20 * time.Millisecond)
				}
				require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				<-done
				t.Fatalf("octostore did not exit")
			}

			var records []struct {
				Route string `json:"route"`
				Body  string `json:"body"`
			}
			require.NoError(t, json.Unmarshal(control(t, "GET", url+"/__control/requests", ""), &records))
			var tokens []string
			for _, r := range records {
				var b struct {
					LeaderToken string `json:"leader_token"`
				}
				if json.Unmarshal([]byte(r.Body), &b) == nil && b.LeaderToken != "" {
					tokens = append(tokens, b.LeaderToken)
				}
			}
			require.NotEmpty(t, tokens, "the client never used its capability; the test proves nothing")
			for _, tok := range tokens {
				require.NotContains(t, out.String(), tok)
				require.NotContains(t, errb.String(), tok)
				require.NotContains(t, string(argv), tok)
			}
			require.NotContains(t, out.String()+errb.String(), "leader_token")
		})
	}
}

// The bearer token is the lock capability. A server that reflects it into
// every field it can (status fields, error details, request ids, stream
// refusals) must never get it printed by lock status or lock watch, in either
// output form; it is replaced by [REDACTED]. It is read from a token file, so
// it is not on the command line either.
func TestBearerTokenNeverPrinted(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		faults string
		watch  bool
		code   int
		// redactedIn says where the reflected token must show up as
		// [REDACTED] ("out" or "err"), proving it really was reflected.
		redactedIn string
	}{
		{"status json", []string{"lock", "status", "repo/x", "--json"}, `{"kind":"reflect_token"}`, false, 0, "out"},
		{"status human, failing", []string{"lock", "status", "repo/x"},
			`[{"route":"lock_status","kind":"reflect_token"},{"route":"lock_status","kind":"error","status":503}]`, false, 70, "err"},
		{"status json, refused", []string{"lock", "status", "repo/x", "--json"},
			`[{"route":"lock_status","kind":"reflect_token"},{"route":"lock_status","kind":"error","status":403}]`, false, 70, "err"},
		{"watch json", []string{"lock", "watch", "repo/x", "--json"}, `{"kind":"reflect_token"}`, true, 143, "out"},
		{"watch human, stream refused then reconciles", []string{"lock", "watch", "repo/x"},
			`[{"kind":"reflect_token"},{"route":"lock_watch","kind":"error","status":503,"retry_after_ms":100,"count":1},{"route":"lock_status","kind":"error","status":503,"count":1}]`,
			true, 143, "err"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url, tokenFile := lockAuthority(t)
			acquireLock(t, url, "repo/x")
			control(t, "POST", url+"/__control/faults", c.faults)
			env := map[string]string{"OCTOSTORE_URL": url, "OCTOSTORE_TOKEN_FILE": tokenFile}
			p := startCLI(t, env, c.args...)
			argv, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.cmd.Process.Pid))
			var out []string
			if c.watch {
				// Two snapshots (one for a failed first status read), then stop.
				for len(out) < 2 {
					out = append(out, p.line(t))
				}
				require.Equal(t, c.code, p.signal(t, syscall.SIGTERM))
			} else {
				for l := range p.lines {
					out = append(out, l)
				}
				select {
				case <-p.done:
				case <-time.After(20 * time.Second):
					t.Fatal("lock status did not exit")
				}
				require.Equal(t, c.code, p.cmd.ProcessState.ExitCode())
			}
			stdout, stderr := strings.Join(out, "\n"), p.errb.String()
			require.NotContains(t, stdout, readToken)
			require.NotContains(t, stderr, readToken)
			require.NotContains(t, string(argv), readToken)
			where := map[string]string{"out": stdout, "err": stderr}[c.redactedIn]
			require.Contains(t, where, "[REDACTED]", "the server never reflected the token; the test proves nothing")
		})
	}
}
