package supervisor

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/octostore-supervisor/supervisor/internal/testkit/etcdtest"
	"github.com/octostore-supervisor/supervisor/internal/testkit/proctest"
)

// Issue 32, finding 5, and issue 42: credentials go over cleartext TCP to a
// loopback port only when root or we serve it, judged on the very
// connection they would go on; to anything else only with
// --allow-cleartext-credentials. A unix socket served by root or by us is
// the other local way.

// etcdPassword is the root password of the clusters these tests enable
// authentication on.
const etcdPassword = "s3cr3t-etcd-Pa55"

// withEtcdAuth enables authentication on c (user root, etcdPassword) and
// returns a credentials file for OCTOSTORE_TOKEN_FILE and a client that
// authenticates.
func withEtcdAuth(t *testing.T, c *etcdtest.Cluster) (string, *clientv3.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli := c.Client(t)
	_, err := cli.UserAdd(ctx, "root", etcdPassword)
	require.NoError(t, err)
	_, err = cli.UserGrantRole(ctx, "root", "root")
	require.NoError(t, err)
	_, err = cli.AuthEnable(ctx)
	require.NoError(t, err)
	auth, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), Username: "root", Password: etcdPassword, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	require.NoError(t, err)
	t.Cleanup(func() { auth.Close() })
	// Each member applies the new user and the enabled auth when raft hands
	// them over, a moment after the leader: until then a hold that asks that
	// member is refused (authentication_failed, seen under make test's load).
	// A serializable read, answered by the member alone, shows it applied them.
	for _, ep := range c.Endpoints() {
		one, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, Username: "root", Password: etcdPassword, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
		require.NoError(t, err)
		proctest.WaitFor(t, 10*time.Second, "member "+ep+" to authenticate root", func() bool {
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			defer rcancel()
			_, err := one.Get(rctx, "probe", clientv3.WithSerializable())
			return err == nil
		})
		one.Close()
	}
	creds := filepath.Join(t.TempDir(), "creds")
	require.NoError(t, os.WriteFile(creds, []byte("root:"+etcdPassword+"\n"), 0o600))
	return creds, auth
}

// freeLoopbackPort is a loopback port nothing listens on: a server's, while
// it is down.
func freeLoopbackPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// octostoreCmd runs the octostore client with env added to a clean
// environment and returns its exit code and output.
func octostoreCmd(t *testing.T, limit time.Duration, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.octostore, args...)
	cmd.Env = localEnv(env...)
	var out, errb syncBuf
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// A member's loopback port is free (the member is down or restarting) and
// nobody listens there, relaying to the cluster. Neither `octostore lock
// hold` nor the supervisor's embedded hold may send etcd's user and password
// through it: both exit 64 before sending a byte, naming who serves the port
// and the fix. With --allow-cleartext-credentials the user accepts that by
// name: the run goes through the relay, which logs the password (the test
// bites).
func TestEtcdCredentialsRefusedOverCleartextLoopback(t *testing.T) {
	t.Parallel()
	srv := etcdServer(t)
	c := etcdtest.Start(t, etcdtest.Options{Server: srv})
	creds, _ := withEtcdAuth(t, c)
	relay := freeLoopbackPort(t)
	log := relayAsNobody(t, relay, c.Member(0).ClientAddr())
	refusedThroughRelay(t, "etcd://"+relay+"/t32", append(etcdEnv(srv), "OCTOSTORE_TOKEN_FILE="+creds), log,
		"refusing to send etcd credentials (OCTOSTORE_TOKEN_FILE) over cleartext etcd://: "+relay+squatted, etcdPassword)
}

// The same for a bearer token over http:// to the fake server on loopback.
func TestBearerTokenRefusedOverCleartextLoopback(t *testing.T) {
	t.Parallel()
	server := startAuthority(t)
	relay := freeLoopbackPort(t)
	log := relayAsNobody(t, relay, strings.TrimPrefix(server, "http://"))
	refusedThroughRelay(t, "http://"+relay, []string{"OCTOSTORE_TOKEN=t-e2e"}, log,
		"refusing to send the bearer token over cleartext http://: "+relay+squatted, "Bearer t-e2e")
}

// squatted is how a refusal names nobody's listener, the test running as root.
var squatted = fmt.Sprintf(" is served by uid %d, neither root nor us (uid 0)", nobody)

// Upstream's set-up: a server on a loopback port, served by root or by the
// user itself. The token goes to it without any flag: a lock hold of root
// on the cluster root runs, and one of nobody's on root's server and on a
// cluster of root's (etcd://127.0.0.1 with user:password).
func TestCredentialsGoToALoopbackPortOfRootOrOurs(t *testing.T) {
	t.Parallel()
	server := startAuthority(t)
	srv := etcdServer(t)
	c := etcdtest.Start(t, etcdtest.Options{Server: srv})
	creds, _ := withEtcdAuth(t, c)
	readable := filepath.Join(t.TempDir(), "creds")
	require.NoError(t, os.Chmod(filepath.Dir(readable), 0o711))
	require.NoError(t, os.Chmod(filepath.Dir(filepath.Dir(readable)), 0o711))
	require.NoError(t, os.WriteFile(readable, []byte("root:"+etcdPassword+"\n"), 0o600))
	require.NoError(t, os.Chown(readable, int(nobody), int(nobody)))
	for _, run := range []struct {
		name   string
		uid    uint32
		env    []string
		server string
	}{
		{"http, ours", 0, []string{"OCTOSTORE_TOKEN=t-e2e"}, server},
		{"http, root's for nobody", nobody, []string{"OCTOSTORE_TOKEN=t-e2e"}, server},
		{"etcd, ours", 0, append(etcdEnv(srv), "OCTOSTORE_TOKEN_FILE="+creds), c.URL("/t42")},
		{"etcd, root's for nobody", nobody, append(etcdEnv(srv), "OCTOSTORE_TOKEN_FILE="+readable), c.URL("/t42")},
	} {
		t.Run(run.name, func(t *testing.T) {
			r := startLocal(t, sc{env: run.env, uid: run.uid}, "lock", "jobs-"+strconv.Itoa(int(run.uid)), "-", "--server", run.server, "--ttl", "10")
			r.waitEvent("acquired", bound)
			require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
			require.Equal(t, 143, r.wait(bound), r.stderr())
		})
	}
}

// refusedThroughRelay requires `octostore lock hold` and a supervised lock
// on server, with the credentials in env, to refuse with refusal (exit 64)
// before anything reaches the relay logging to log; then a supervised lock
// with --allow-cleartext-credentials to be acquired through it, the relay
// seeing secret.
func refusedThroughRelay(t *testing.T, server string, env []string, log, refusal, secret string) {
	t.Helper()
	code, out, errb := octostoreCmd(t, bound, env, "lock", "hold", "jobs", "--json", "--server", server, "--acquire-timeout", "5s")
	require.Equal(t, 64, code, errb)
	require.Empty(t, out)
	require.Contains(t, errb, refusal)
	require.Contains(t, errb, "--allow-cleartext-credentials")
	r := startLocal(t, sc{env: env}, "lock", "jobs", "-", "--server", server)
	require.Equal(t, 64, r.wait(bound), r.stderr())
	require.Contains(t, r.stderr(), refusal)
	relayed, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Empty(t, relayed, "something was sent through the relay")

	r = startLocal(t, sc{env: env}, "lock", "jobs", "-", "--server", server, "--allow-cleartext-credentials", "--ttl", "10")
	r.waitEvent("acquired", bound)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, r.wait(bound), r.stderr())
	relayed, err = os.ReadFile(log)
	require.NoError(t, err)
	require.Contains(t, string(relayed), secret, "the relay did not see the credentials: the test does not bite")
}

// The local alternative: the members' unix sockets (etcd+unix://), served
// by root, which the hold trusts with the credentials: a supervised lock is
// acquired and released through them. A socket nobody serves in a shared
// directory, relaying to the cluster, gets nothing: the hold checks who
// serves a socket before it sends a byte, and refuses it, naming the uid.
func TestEtcdUnixSocketMembersArePeerChecked(t *testing.T) {
	t.Parallel()
	srv := etcdServer(t)
	c := etcdtest.Start(t, etcdtest.Options{Server: srv, Unix: true})
	creds, _ := withEtcdAuth(t, c)
	env := append(etcdEnv(srv), "OCTOSTORE_TOKEN_FILE="+creds)

	r := startLocal(t, sc{env: env}, "lock", "jobs", "-", "--server", c.UnixURL("/t32"), "--ttl", "10")
	r.waitEvent("acquired", bound)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 143, r.wait(bound), r.stderr())
	// A member a moment behind in raft refuses the token another member just
	// issued; the hold retries that, announcing it as a transport_error
	// waiting line before authority (hold/etcd, failureCode). Anything else
	// before acquired, or after it, is a failure.
	evs := r.events()
	for len(evs) > 0 && evs[0] == "waiting" {
		evs = evs[1:]
	}
	if len(evs) < len(r.events()) {
		require.Equal(t, "transport_error", r.line("waiting")["reason_code"], r.stderr())
		t.Logf("retried before authority; stderr:\n%s", r.stderr())
	}
	require.Equal(t, []string{"acquired", "released"}, evs, r.stderr())

	shared := t.TempDir()
	require.NoError(t, os.Chmod(shared, 0o1777))
	fake := filepath.Join(shared, "etcd.sock")
	log := relayAsNobody(t, fake, c.Member(0).ClientAddr())
	server := "etcd+unix://" + url.PathEscape(fake) + "/t32"
	code, out, errb := octostoreCmd(t, bound, env, "lock", "hold", "jobs", "--json", "--server", server, "--acquire-timeout", "3s")
	require.NotEqual(t, 0, code, errb)
	require.NotContains(t, out, `"event":"acquired"`)
	require.Contains(t, errb, fmt.Sprintf("its socket is served by uid %d, neither root nor us", nobody))
	s := startLocal(t, sc{env: env}, "lock", "jobs", "-", "--server", server, "--acquire-timeout", "3s")
	require.Equal(t, 11, s.wait(bound), s.stderr())
	require.Contains(t, s.stderr(), fmt.Sprintf("its socket is served by uid %d, neither root nor us", nobody))
	relayed, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Empty(t, relayed, "something was sent to a socket nobody serves")
}

// Wrong credentials end a hold at once, with exit 64 and the code that names
// the fix, and are never printed; only a stale token is retried (hold/etcd,
// failureCode).
func TestEtcdWrongPasswordEndsTheHold(t *testing.T) {
	t.Parallel()
	srv := etcdServer(t)
	c := etcdtest.Start(t, etcdtest.Options{Server: srv, Unix: true})
	withEtcdAuth(t, c)
	wrong := filepath.Join(t.TempDir(), "creds")
	require.NoError(t, os.WriteFile(wrong, []byte("root:not-"+etcdPassword+"\n"), 0o600))
	env := append(etcdEnv(srv), "OCTOSTORE_TOKEN_FILE="+wrong)
	code, out, errb := octostoreCmd(t, bound, env, "lock", "hold", "jobs", "--json", "--server", c.UnixURL("/t32"), "--acquire-timeout", "10s")
	require.Equal(t, 64, code, "%s%s", out, errb)
	require.NotContains(t, out, `"event":"acquired"`)
	require.Contains(t, out+errb, "authentication_failed")
	require.NotContains(t, out+errb, "not-"+etcdPassword)
}
