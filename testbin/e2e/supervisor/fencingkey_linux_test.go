package supervisor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// An authority that names the holder's record (etcd: the holder key) gives
// it as fencing_key; the worker gets it as OCTOSTORE_FENCING_KEY so it can
// fence its own writes in the same store. A value inherited from the
// supervisor's environment never reaches the worker: a stale key would let a
// deposed worker fence against the wrong record.
func TestFencingKeyHandedToWorker(t *testing.T) {
	t.Parallel()
	stale := "OCTOSTORE_FENCING_KEY=/stale/key"
	for name, tc := range map[string]struct{ key, want string }{
		"given by the hold":   {key: ",key=/octostore/lock/job/694d8a3b1f", want: "/octostore/lock/job/694d8a3b1f"},
		"not given, stripped": {},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := start(t, sc{
				kind:   "lock",
				env:    []string{stale},
				worker: "--term-exits --env-out {dir}/env",
				hold:   []string{"emit:acquired,term=17,budget=10000" + tc.key, "waitfile:{dir}/env", "emit:released,term=17"},
			})
			require.Equal(t, 0, r.wait(bound), r.stderr())
			require.Equal(t, []string{"acquired", "released"}, r.events())
			require.NotContains(t, r.out.String(), "fencing_key", "the supervisor's own lines keep the reference's bytes")
			env, err := os.ReadFile(filepath.Join(r.dir, "env"))
			require.NoError(t, err)
			require.NotContains(t, strings.Split(string(env), "\n"), stale)
			if tc.want == "" {
				require.NotContains(t, string(env), "OCTOSTORE_FENCING_KEY=")
				return
			}
			require.Equal(t, tc.want, envValueIn(t, filepath.Join(r.dir, "env"), "OCTOSTORE_FENCING_KEY"))
		})
	}
}
