package etcd

import (
	"crypto/tls"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/octostore-supervisor/supervisor/hold"
)

// Environment variables this authority reads (through the LookupEnv given to
// Open, never directly).
const (
	envCABundle       = "OCTOSTORE_CA_BUNDLE"
	envCert           = "OCTOSTORE_ETCD_CERT"
	envKey            = "OCTOSTORE_ETCD_KEY"
	envTokenFile      = "OCTOSTORE_TOKEN_FILE"
	envAllowOldServer = "OCTOSTORE_ETCD_ALLOW_OLD_SERVER"
)

// Authority is one etcd cluster as a hold.Authority.
type Authority struct {
	t   target
	cfg clientv3.Config
	// client is nil until connect: with credentials, clientv3.New
	// authenticates over the network, which Open must not do (a cluster that
	// is down for a moment is not a usage error).
	client *clientv3.Client
	// allowOld is OCTOSTORE_ETCD_ALLOW_OLD_SERVER=1 (tests against Debian's
	// 3.4.23 need it).
	allowOld bool
	// Diag receives the "octostore: …" lines of commands that have no
	// HoldSpec/WatchSpec writer (status, create); Open sets os.Stderr.
	Diag io.Writer

	mu      sync.Mutex
	checked bool // the server version passed checkVersion
}

var _ hold.Authority = (*Authority)(nil)

// Open parses raw (etcd://…, etcds://… or etcd+unix://…) and prepares a
// client; nothing is dialled yet. Every error is a *hold.UsageError (exit 64)
// naming the fix.
func Open(raw string, env hold.LookupEnv, tr hold.Transport) (*Authority, error) {
	return open(raw, env, tr)
}

// open is Open with extra gRPC dial options (tests add interceptors).
func open(raw string, env hold.LookupEnv, tr hold.Transport, dial ...grpc.DialOption) (*Authority, error) {
	t, err := parseTarget(raw)
	if err != nil {
		return nil, err
	}
	_, withCredentials := env(envTokenFile)
	if t.verify, err = t.cleartextAllowed(tr, withCredentials); err != nil {
		return nil, err
	}
	// Last, so it is the dialer grpc uses (clientv3 appends ours last).
	switch {
	case t.unix:
		dial = append(dial, grpc.WithContextDialer(peerCheckedDial))
	case t.verify:
		dial = append(dial, grpc.WithContextDialer(verifiedTCPDial))
	}
	cfg := clientv3.Config{
		Endpoints: t.clientEndpoints(),
		// Bounds the authentication clientv3.New does with credentials.
		DialTimeout: attemptCap,
		// Keepalive probes notice a frozen member; per-call deadlines do the
		// rest (a stopped member keeps receiving calls until this fires).
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		// The client's own logger would print to stderr outside our control.
		Logger:      zap.NewNop(),
		DialOptions: dial,
	}
	if cfg.TLS, err = tlsConfig(t, env); err != nil {
		return nil, err
	}
	if cfg.Username, cfg.Password, err = credentials(env); err != nil {
		return nil, err
	}
	v, ok := env(envAllowOldServer)
	return &Authority{t: t, cfg: cfg, allowOld: ok && v == "1", Diag: os.Stderr}, nil
}

// connect creates the client once (a.mu held). Its errors never carry the
// password (etcd's texts do not quote it; redact makes sure).
func (a *Authority) connect() error {
	if a.client != nil {
		return nil
	}
	c, err := clientv3.New(a.cfg)
	if err != nil {
		return &redactedError{msg: "etcd " + a.Server() + ": connect: " + redact(err.Error(), a.cfg.Password) + a.t.refusedPeers(), err: err}
	}
	a.client = c
	return nil
}

// Server is the normalized URL without credentials.
func (a *Authority) Server() string { return a.t.server() }

// Close closes the client's connections.
func (a *Authority) Close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client == nil {
		return nil
	}
	return a.client.Close()
}

// tlsConfig is nil for etcd:// and refuses client certificates there rather
// than ignoring them. For etcds:// the CA bundle adds to the system roots and
// the client key file must pass the token file's ownership checks.
func tlsConfig(t target, env hold.LookupEnv) (*tls.Config, error) {
	cert, hasCert := env(envCert)
	key, hasKey := env(envKey)
	ca, hasCA := env(envCABundle)
	if !t.tls {
		if hasCert || hasKey {
			return nil, &hold.UsageError{Msg: envCert + "/" + envKey + " need an etcds:// server URL (TLS)", Class: hold.ErrServerScheme}
		}
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if hasCA {
		pool, err := hold.LoadCABundle(&ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if hasCert != hasKey {
		return nil, &hold.UsageError{Msg: "set both " + envCert + " and " + envKey + " (client certificate and its key), or neither", Class: hold.ErrToken}
	}
	if !hasCert {
		return cfg, nil
	}
	certPEM, err := os.ReadFile(cert)
	if err != nil {
		return nil, &hold.UsageError{Msg: "could not read " + envCert + " " + cert + ": " + err.Error(), Class: hold.ErrToken, Cause: err}
	}
	keyPEM, err := hold.ReadSecretFile(key, envKey)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, []byte(keyPEM))
	if err != nil {
		// X509KeyPair's errors never contain key material.
		return nil, &hold.UsageError{Msg: "unusable client certificate/key (" + envCert + ", " + envKey + "): " + err.Error(), Class: hold.ErrToken, Cause: err}
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

// credentials reads etcd's user:password from OCTOSTORE_TOKEN_FILE with the
// token file's checks; unset means no etcd authentication. OCTOSTORE_TOKEN
// is not consulted: a password belongs in a checked file.
func credentials(env hold.LookupEnv) (user, password string, err error) {
	path, ok := env(envTokenFile)
	if !ok {
		return "", "", nil
	}
	onlyFile := func(k string) (string, bool) {
		if k == envTokenFile {
			return path, true
		}
		return "", false
	}
	tok, _, err := hold.LoadToken(onlyFile, os.Stdin)
	if err != nil {
		return "", "", err
	}
	user, password, ok = strings.Cut(tok, ":")
	if !ok || user == "" || password == "" {
		return "", "", &hold.UsageError{Msg: "OCTOSTORE_TOKEN_FILE must hold etcd credentials as user:password for an etcd server", Class: hold.ErrToken}
	}
	return user, password, nil
}

// redactedError shows msg and keeps err for errors.Is (failureCode).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redact removes secret from s (a client error may echo its configuration).
func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[REDACTED]")
}

func (a *Authority) diagf(w io.Writer, format string, args ...any) {
	if w == nil {
		w = a.Diag
	}
	fmt.Fprintf(w, "octostore: %s\n", hold.TerminalSafe(fmt.Sprintf(format, args...)))
}
