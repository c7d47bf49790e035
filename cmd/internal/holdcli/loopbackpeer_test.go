package holdcli

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/platform"
)

// A lock command's token goes over cleartext to a loopback server only when
// the kernel says root or we serve its port: here we do. Where the owner
// cannot be learnt (Wine lists no process for a loopback connection; macOS
// keeps it to itself) the command refuses with 64 before a byte is sent,
// saying why and naming the flag.
func TestTokenToALoopbackServerOfOurs(t *testing.T) {
	var bearer atomic.Value
	bearer.Store("")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bearer.Store(r.Header.Get("Authorization"))
		http.Error(w, `{"error":{"code":"not_found","message":"no such lock"}}`, http.StatusNotFound)
	}))
	defer srv.Close()
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"OCTOSTORE_URL": srv.URL, "OCTOSTORE_TOKEN": "t-loopback"}[k]
		return v, ok
	}
	var out, errb bytes.Buffer
	code := runTest([]string{"octostore", "lock", "status", "n"}, env, &out, &errb)
	_, wine := platform.WineVersion()
	if wine || runtime.GOOS == "darwin" {
		require.Equal(t, 64, code, errb.String())
		require.Contains(t, errb.String(), "refusing to send the bearer token over cleartext http://: who serves 127.0.0.1:")
		require.Contains(t, errb.String(), "--allow-cleartext-credentials")
		require.Empty(t, bearer.Load(), "the token went out")
		return
	}
	require.NotEqual(t, 64, code, errb.String())
	require.Equal(t, "Bearer t-loopback", bearer.Load())
}
