package etcd

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/hold"
)

func noEnv(string) (string, bool) { return "", false }

func TestOpenNormalizesServer(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{"etcd://127.0.0.1", "etcd://127.0.0.1:2379/octostore"},
		{"etcd://LOCALHOST:2380,127.0.0.2:3000/team/ci/", "etcd://localhost:2380,127.0.0.2:3000/team/ci"},
		{"etcd://[::1]", "etcd://[::1]:2379/octostore"},
		{"etcds://etcd-1.example.com,etcd-2.example.com:2381", "etcds://etcd-1.example.com:2379,etcd-2.example.com:2381/octostore"},
	} {
		a, err := Open(tc.raw, noEnv, hold.Transport{})
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.want, a.Server(), tc.raw)
		require.NoError(t, a.Close())
	}
}

func TestOpenRefusesWithTheFix(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		class error
		says  string
	}{
		{"etcd://etcd.example.com", hold.ErrCleartextCapability, "--allow-insecure-http"},
		{"etcd://127.0.0.1,10.0.0.2", hold.ErrCleartextCapability, "etcds://"},
		{"etcd://root:pw@127.0.0.1", hold.ErrServerCredentials, "OCTOSTORE_TOKEN_FILE"},
		{"etcd://127.0.0.1/?x=1", hold.ErrServerQuery, "query"},
		{"http://127.0.0.1:2379", hold.ErrInvalidServerURL, "etcd://HOST:PORT"},
		{"etcd://::1", hold.ErrInvalidServerURL, "brackets"},
		{"etcd://127.0.0.1:0", hold.ErrInvalidServerURL, "port"},
		{"etcd://127.0.0.1//x", hold.ErrInvalidServerURL, "segment"},
		{"etcd://127.0.0.1/a/../b", hold.ErrInvalidServerURL, "segment"},
	} {
		_, err := Open(tc.raw, noEnv, hold.Transport{})
		var ue *hold.UsageError
		require.ErrorAs(t, err, &ue, tc.raw)
		require.Equal(t, hold.ExitUsage, ue.ExitCode())
		require.ErrorIs(t, err, tc.class, tc.raw)
		require.Contains(t, err.Error(), tc.says, tc.raw)
		require.NotContains(t, err.Error(), "pw", tc.raw)
	}
	a, err := Open("etcd://etcd.example.com", noEnv, hold.Transport{AllowInsecureHTTP: true})
	require.NoError(t, err, "--allow-insecure-http permits cleartext to other hosts")
	require.NoError(t, a.Close())
}

func envOf(m map[string]string) hold.LookupEnv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// No secret (password, key) is ever printed: not in Server(), not in any
// error, whatever is wrong with the files holding them.
func TestSecretsNeverPrinted(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the files here differ only in their mode bits; Windows checks ACLs instead (hold.ReadSecretFile, tested in package hold)")
	}
	dir := t.TempDir()
	const password = "s3cr3t-Pa55"
	creds := filepath.Join(dir, "creds")
	require.NoError(t, os.WriteFile(creds, []byte("root:"+password+"\n"), 0o644))
	_, err := Open("etcds://127.0.0.1", envOf(map[string]string{envTokenFile: creds}), hold.Transport{})
	require.ErrorIs(t, err, hold.ErrToken, "a group-readable credentials file is refused")
	require.Contains(t, err.Error(), "chmod 600")
	require.NotContains(t, err.Error(), password)

	require.NoError(t, os.Chmod(creds, 0o600))
	a, err := Open("etcds://127.0.0.1", envOf(map[string]string{envTokenFile: creds}), hold.Transport{})
	require.NoError(t, err)
	require.NotContains(t, a.Server(), password)
	require.NoError(t, a.Close())

	bad := filepath.Join(dir, "bad")
	require.NoError(t, os.WriteFile(bad, []byte(password+"\n"), 0o600))
	_, err = Open("etcds://127.0.0.1", envOf(map[string]string{envTokenFile: bad}), hold.Transport{})
	require.ErrorContains(t, err, "user:password")
	require.NotContains(t, err.Error(), password)

	const keyText = "-----BEGIN PRIVATE KEY-----\nTOPSECRETKEYMATERIAL\n-----END PRIVATE KEY-----\n"
	key, cert := filepath.Join(dir, "key.pem"), filepath.Join(dir, "cert.pem")
	require.NoError(t, os.WriteFile(key, []byte(keyText), 0o640))
	require.NoError(t, os.WriteFile(cert, []byte("not a certificate"), 0o644))
	tlsEnv := envOf(map[string]string{envCert: cert, envKey: key})
	_, err = Open("etcds://127.0.0.1", tlsEnv, hold.Transport{})
	require.ErrorContains(t, err, "chmod 600")
	require.NoError(t, os.Chmod(key, 0o600))
	_, err = Open("etcds://127.0.0.1", tlsEnv, hold.Transport{})
	require.ErrorContains(t, err, "unusable client certificate/key")
	require.NotContains(t, err.Error(), "TOPSECRETKEYMATERIAL")
	_, err = Open("etcd://127.0.0.1", tlsEnv, hold.Transport{})
	require.ErrorContains(t, err, "etcds://", "a client certificate is not silently ignored over cleartext")
}

// OCTOSTORE_CA_BUNDLE is read as the HTTP client reads it: a damaged PEM
// block beside a good certificate refuses the bundle rather than quietly
// trusting less than the file says.
func TestCABundleIsParsedStrictly(t *testing.T) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	require.NoError(t, err)
	good := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}

	a, err := Open("etcds://127.0.0.1", envOf(map[string]string{envCABundle: write("good.pem", good)}), hold.Transport{})
	require.NoError(t, err)
	require.NoError(t, a.Close())

	damaged := append(append([]byte{}, good...), "-----BEGIN CERTIFICATE-----\nnot base64\n"...)
	_, err = Open("etcds://127.0.0.1", envOf(map[string]string{envCABundle: write("damaged.pem", damaged)}), hold.Transport{})
	require.ErrorIs(t, err, hold.ErrCABundle)
	require.ErrorContains(t, err, "could not parse OCTOSTORE_CA_BUNDLE")
}

func TestVersionFloor(t *testing.T) {
	for v, want := range map[string]bool{
		"3.4.23": false, "3.4.31": true, "3.5.12": false, "3.5.13": true, "3.5.23": true,
		"3.6.0": true, "3.6.16": true, "3.7.0": true, "3.3.27": false, "2.3.8": false, "4.0.0": true,
		"3.6.0-rc.1": true,
	} {
		require.Equal(t, want, VersionOK(v), v)
	}
	_, err := versionOK("3.x")
	require.Error(t, err)
}

// Invariant 3: D = send time + 0.8 × min(requested, granted TTL) on both
// clocks; renewals every min(TTL/3, 5 s).
func TestAuthorityDeadlineArithmetic(t *testing.T) {
	start := hold.Instant{Scheduler: time.Unix(1000, 0), ContinuousMS: 50_000}
	for _, tc := range []struct {
		requested, granted, d, renew time.Duration
	}{
		{10 * time.Second, 10 * time.Second, 8 * time.Second, 3333333333},
		{10 * time.Second, 7 * time.Second, 5600 * time.Millisecond, 2333333333},
		{30 * time.Second, 60 * time.Second, 24 * time.Second, 5 * time.Second},
		{1 * time.Second, 2 * time.Second, 800 * time.Millisecond, 333333333},
	} {
		r := &run{spec: hold.HoldSpec{TTL: tc.requested}}
		wall := time.Unix(5000, 0)
		require.NoError(t, r.confirmed(start, wall, proof{ttl: tc.granted}))
		require.Equal(t, hold.Deadline{Scheduler: start.Scheduler.Add(tc.d), ContinuousMS: 50_000 + tc.d.Milliseconds()}, r.c.d)
		require.Equal(t, start.Scheduler.Add(tc.renew), r.c.renewAt.Scheduler)
		require.Equal(t, wall.Add(tc.granted).UTC(), r.c.expires, "expires_at is the server's granted TTL")
	}
}

func TestNamePrefixesNeverNest(t *testing.T) {
	tg := target{prefix: "/octostore"}
	a, ab := tg.namePrefix(hold.KindLock, "a"), tg.namePrefix(hold.KindLock, "a/b")
	require.Equal(t, "/octostore/lock/a/", a)
	require.Equal(t, "/octostore/lock/a%2Fb/", ab)
	require.NotContains(t, ab, a)
	require.Equal(t, "/octostore/election/Xy_-9/", tg.namePrefix(hold.KindElection, "Xy_-9"))
	require.NotEqual(t, tg.namePrefix(hold.KindLock, "a%2Fb"), ab, "an encoded-looking name is encoded again")
}

// Credentials go over cleartext etcd:// to loopback members only, each
// connection checked (verify); to any other member only by name.
func TestCleartextCredentialsRule(t *testing.T) {
	for _, c := range []struct {
		raw         string
		tr          hold.Transport
		credentials bool
		verify      bool
		refusal     string
	}{
		{"etcd://127.0.0.1,localhost:2479,[::1]", hold.Transport{}, true, true, ""},
		{"etcd://127.0.0.1", hold.Transport{}, false, false, ""},
		{"etcd://127.0.0.1", hold.Transport{AllowCleartextCredentials: true}, true, false, ""},
		{"etcds://127.0.0.1", hold.Transport{}, true, false, ""},
		{"etcd://127.0.0.1,10.0.0.2", hold.Transport{AllowInsecureHTTP: true}, true, false, "over cleartext etcd:// to non-loopback member 10.0.0.2:2379"},
		{"etcd://10.0.0.2", hold.Transport{AllowInsecureHTTP: true, AllowCleartextCredentials: true}, true, false, ""},
		{"etcd://10.0.0.2", hold.Transport{}, false, false, "refusing cleartext etcd:// to non-loopback member 10.0.0.2:2379"},
	} {
		tg, err := parseTarget(c.raw)
		require.NoError(t, err)
		verify, err := tg.cleartextAllowed(c.tr, c.credentials)
		if c.refusal != "" {
			require.ErrorContains(t, err, c.refusal, c.raw)
			continue
		}
		require.NoError(t, err, c.raw)
		require.Equal(t, c.verify, verify, c.raw)
	}
}
