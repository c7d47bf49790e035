package contain

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// Ctrl-C stops the supervisor with 130, Ctrl-Break with 143; close, logoff and
// shutdown are left to the Go runtime, which delivers them as SIGTERM (143)
// and holds the process open while teardown runs.
func TestConsoleSignal(t *testing.T) {
	for _, tc := range []struct {
		event   uint32
		handled bool
		exit    int
	}{
		{windows.CTRL_C_EVENT, true, ExitSIGINT},
		{windows.CTRL_BREAK_EVENT, true, ExitSIGTERM},
		{windows.CTRL_CLOSE_EVENT, false, 0},
		{windows.CTRL_LOGOFF_EVENT, false, 0},
		{windows.CTRL_SHUTDOWN_EVENT, false, 0},
	} {
		sig, ok := consoleSignal(tc.event)
		require.Equal(t, tc.handled, ok, "event %d", tc.event)
		if ok {
			r := &run{}
			require.Equal(t, tc.exit, r.exitCode(cause{kind: causeSignal, sig: sig}, nil), "event %d", tc.event)
		}
	}
	// The runtime's mapping of the events we leave to it.
	require.Equal(t, ExitSIGTERM, 128+int(syscall.SIGTERM))
}

// workerEnv drops the holder's secrets whatever the case of their names:
// Windows environment names are case-insensitive.
func TestWorkerEnvCaseInsensitive(t *testing.T) {
	got := workerEnv([]string{"Octostore_Token=a", "octostore_token_file=b", "OCTOSTORE_FENCING_TERM=1", "Path=C:\\x", "octostore_url=u"})
	require.Equal(t, []string{"Path=C:\\x", "octostore_url=u"}, got)
}
