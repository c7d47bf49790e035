package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/internal/testkit/etcdtest"
)

// doctor --server etcd://… reports each member (reachable, version, leader,
// round trip) and exits 0 while the cluster can serve as an authority, 70
// when it cannot; a server below the floor is shown and refused.
func TestDoctorProbesAnEtcdAuthority(t *testing.T) {
	for _, srv := range etcdtest.Servers(t) {
		t.Run(srv.Name, func(t *testing.T) {
			c := etcdtest.Start(t, etcdtest.Options{Server: srv})
			report := func(wantCode int) authorityProbe {
				t.Helper()
				var out, errb bytes.Buffer
				code := run([]string{"octostore-supervisor", "doctor", "--json", "--server", c.URL("/octostore")}, nil, &out, &errb)
				require.Equal(t, wantCode, code, errb.String())
				var d struct {
					Authority authorityProbe `json:"authority"`
				}
				require.NoError(t, json.Unmarshal(out.Bytes(), &d), out.String())
				return d.Authority
			}
			// Debian's 3.4.23 is below the supported floor: shown, refused.
			old := srv.Name == "debian"
			want := 0
			if old {
				want = 70
			}
			a := report(want)
			require.Equal(t, c.URL("/octostore"), a.Server)
			require.Equal(t, !old, a.Usable, a.Reason)
			if old {
				require.Contains(t, a.Reason, "below the supported floor")
			}
			require.Len(t, a.Members, 3)
			leaders := 0
			for _, m := range a.Members {
				require.True(t, m.Reachable, "%+v", m)
				require.NotEmpty(t, m.Version)
				require.Positive(t, m.RoundTripMS)
				if m.Leader {
					leaders++
				}
			}
			require.Equal(t, 1, leaders)

			// A killed follower is shown unreachable; the cluster still serves.
			f := c.Follower(t)
			c.Member(f).Kill()
			a = report(want)
			require.False(t, a.Members[f].Reachable)
			require.NotEmpty(t, a.Members[f].Error)
			require.Equal(t, !old, a.Usable, a.Reason)

			// Nobody answers: 70, saying so.
			for i := range 3 {
				if i != f {
					c.Member(i).Kill()
				}
			}
			a = report(70)
			require.False(t, a.Usable)
			require.Contains(t, a.Reason, "no etcd member answered")
		})
	}
}
