//go:build linux

package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

func TestStatusShowsHolderLikeTheHTTPAuthority(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		a := m.authority(t, "/t11")
		server := m.URL("/t11")
		ctx := context.Background()
		st, err := a.Status(ctx, hold.KindElection, "room")
		require.NoError(t, err)
		require.Equal(t, "room · vacant · authority "+server, st.Human())
		require.Equal(t, `{"election_id":"room","status":"vacant","retry_after_ms":0}`, string(st.JSON()))
		lk, err := a.Status(ctx, hold.KindLock, "jobs")
		require.NoError(t, err)
		require.Equal(t, "jobs · free · term 0 · authority "+server, lk.Human())

		e := startHold(t, a, election("room", "alpha"))
		tm := term(e.waitEvent(t, "leader", 20*time.Second))
		st, err = a.Status(ctx, hold.KindElection, "room")
		require.NoError(t, err)
		require.Regexp(t, fmt.Sprintf(`^room · leader alpha · term %d · expires \S+ · authority %s$`, tm, regexp.QuoteMeta(server)), st.Human())
		var body struct {
			Status string
			Leader struct {
				CandidateID string `json:"candidate_id"`
				Term        int64
			}
		}
		require.NoError(t, json.Unmarshal(st.JSON(), &body))
		require.Equal(t, "leader", body.Status)
		require.Equal(t, "alpha", body.Leader.CandidateID)
		require.Equal(t, tm, body.Leader.Term)

		l := startHold(t, a, lock("jobs"))
		lt := term(l.waitEvent(t, "acquired", 20*time.Second))
		lk, err = a.Status(ctx, hold.KindLock, "jobs")
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("jobs · held · term %d · authority %s", lt, server), lk.Human())
	})
}

func TestWatchPrintsEveryChange(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		a := m.authority(t, "/t12")
		var out, diag proctest.SyncBuffer
		sigs := make(chan os.Signal, 1)
		code := make(chan int, 1)
		go func() {
			code <- a.Watch(context.Background(), hold.WatchSpec{Kind: hold.KindElection, Name: "room", JSON: true, Out: &out, Diag: &diag}, sigs)
		}()
		statuses := func() []string {
			var s []string
			for _, l := range out.Lines() {
				var line struct {
					Event    string
					Snapshot struct{ Status string }
				}
				require.NoError(t, json.Unmarshal([]byte(l), &line))
				require.Equal(t, "snapshot", line.Event)
				s = append(s, line.Snapshot.Status)
			}
			return s
		}
		proctest.WaitFor(t, 20*time.Second, "the first snapshot", func() bool { return len(statuses()) == 1 })
		h := startHold(t, a, election("room", "alpha"))
		h.waitEvent(t, "leader", 20*time.Second)
		proctest.WaitFor(t, 20*time.Second, "a leader snapshot", func() bool { return len(statuses()) == 2 })
		h.sigs <- syscall.SIGTERM
		proctest.WaitFor(t, 20*time.Second, "a vacant snapshot", func() bool { return len(statuses()) == 3 })
		require.Equal(t, []string{"vacant", "leader", "vacant"}, statuses())
		sigs <- syscall.SIGINT
		select {
		case c := <-code:
			require.Equal(t, hold.ExitSIGINT, c)
		case <-time.After(10 * time.Second):
			t.Fatal("watch did not end on SIGINT")
		}
		require.Contains(t, out.Lines()[0], `"server":"`+m.URL("/t12")+`"`)
	})
}

func TestProbeReportsMembers(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		dead := m.Follower(t)
		m.Member(dead).Kill()
		a, err := Open(m.URL("/t13"), oldServerEnv, hold.Transport{})
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		info, err := a.Probe(context.Background())
		require.NoError(t, err)
		require.Len(t, info.Members, 3)
		leaders := 0
		for i, mi := range info.Members {
			if i == dead {
				require.False(t, mi.Reachable, "killed member %s", mi.Endpoint)
				require.Error(t, mi.Err)
				continue
			}
			require.True(t, mi.Reachable, mi.Endpoint)
			require.Equal(t, m.ServerVersion(t), mi.Version)
			require.Positive(t, mi.RoundTrip)
			if mi.IsLeader {
				leaders++
				require.Equal(t, mi.MemberID, info.LeaderID)
			}
		}
		require.Equal(t, 1, leaders)
	})
}

func TestCreateElectionMintsRandomIDs(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		a := m.authority(t, "/t14")
		one, err := a.CreateElection(context.Background())
		require.NoError(t, err)
		two, err := a.CreateElection(context.Background())
		require.NoError(t, err)
		require.Regexp(t, `^[A-Za-z0-9_-]{32}$`, one.ElectionID)
		require.NotEqual(t, one.ElectionID, two.ElectionID)
		require.Equal(t, "/elections/"+one.ElectionID+"/campaign", one.CampaignPath)
	})
}

// Below the version floor a hold exits 64 naming the fix, before any event;
// with the test-only override it says so on stderr, once.
func TestOldServerNeedsTheOverride(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		strict, err := Open(m.URL("/t15"), noEnv, hold.Transport{})
		require.NoError(t, err)
		t.Cleanup(func() { strict.Close() })
		if VersionOK(m.ServerVersion(t)) {
			h := startHold(t, strict, election("room", "alpha"))
			h.waitEvent(t, "leader", 20*time.Second)
			require.NotContains(t, h.diag.String(), envAllowOldServer)
			return
		}
		refused := startHold(t, strict, election("room", "alpha"))
		require.Equal(t, hold.ExitUsage, refused.exit(t, 20*time.Second))
		require.Empty(t, refused.out.String())
		require.Contains(t, refused.diag.String(), m.ServerVersion(t))
		require.Contains(t, refused.diag.String(), envAllowOldServer+"=1")
		var diag proctest.SyncBuffer
		require.Equal(t, hold.ExitUsage, strict.Watch(context.Background(),
			hold.WatchSpec{Kind: hold.KindLock, Name: "jobs", Out: &diag, Diag: &diag}, nil))
		_, err = strict.Status(context.Background(), hold.KindLock, "jobs")
		var usage *hold.UsageError
		require.ErrorAs(t, err, &usage, "status below the floor is a usage error (exit 64)")

		a := m.authority(t, "/t15")
		h := startHold(t, a, election("room", "alpha"))
		h.waitEvent(t, "leader", 20*time.Second)
		require.Equal(t, 1, strings.Count(h.diag.String(), "continuing because "+envAllowOldServer+"=1"))
	})
}

// etcd user:password from OCTOSTORE_TOKEN_FILE is never printed, not even
// when the cluster does not use authentication.
func TestCredentialsNeverPrintedByAHold(t *testing.T) {
	eachServer(t, func(t *testing.T, m *cluster) {
		const password = "pw-Zq81xk"
		creds := filepath.Join(t.TempDir(), "creds")
		require.NoError(t, os.WriteFile(creds, []byte("root:"+password), 0o600))
		env := func(k string) (string, bool) {
			if k == envTokenFile {
				return creds, true
			}
			return oldServerEnv(k)
		}
		a, err := Open(m.URL("/t16"), env, hold.Transport{AllowCleartextCredentials: true})
		require.NoError(t, err)
		t.Cleanup(func() { a.Close() })
		h := startHold(t, a, lock("jobs"))
		h.waitEvent(t, "acquired", 20*time.Second)
		h.sigs <- syscall.SIGTERM
		require.Equal(t, hold.ExitSIGTERM, h.exit(t, 10*time.Second))
		require.NotContains(t, h.out.String()+h.diag.String()+a.Server(), password)
	})
}
