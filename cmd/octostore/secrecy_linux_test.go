package main

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

	"github.com/octostore-supervisor/supervisor/internal/proctest"
)

var bin struct{ octostore, authority string }

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "octostore-cli-")
	if err != nil {
		panic(err)
	}
	bin.octostore, bin.authority = filepath.Join(dir, "octostore"), filepath.Join(dir, "authority")
	for _, b := range [][]string{{"-o", bin.octostore, "."}, {"-o", bin.authority, "../../testbin/authority"}} {
		if out, err := exec.Command("go", append([]string{"build"}, b...)...).CombinedOutput(); err != nil {
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
