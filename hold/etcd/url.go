package etcd

import (
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/octostore-supervisor/supervisor/hold"
)

const (
	defaultPort   = "2379"
	defaultPrefix = "/octostore"
)

// target is a parsed --server etcd://…, etcds://… or etcd+unix://… value.
type target struct {
	tls bool
	// unix: the members are unix sockets (etcd+unix://), whose endpoints
	// are absolute paths.
	unix bool
	// verify: credentials go over cleartext to loopback members, each
	// connection checked (cleartextAllowed).
	verify    bool
	endpoints []string // host:port, hosts lower-cased, IPv6 in brackets; or socket paths
	prefix    string   // starts with '/', no trailing '/'
}

// server is the normalized URL without credentials: what every event's
// server field shows.
func (t target) server() string {
	switch {
	case t.unix:
		paths := make([]string, len(t.endpoints))
		for i, p := range t.endpoints {
			paths[i] = url.PathEscape(p)
		}
		return "etcd+unix://" + strings.Join(paths, ",") + t.prefix
	case t.tls:
		return "etcds://" + strings.Join(t.endpoints, ",") + t.prefix
	}
	return "etcd://" + strings.Join(t.endpoints, ",") + t.prefix
}

// clientEndpoints are the endpoints in the etcd client's spelling.
func (t target) clientEndpoints() []string {
	if !t.unix {
		return t.endpoints
	}
	eps := make([]string, len(t.endpoints))
	for i, p := range t.endpoints {
		eps[i] = "unix://" + p
	}
	return eps
}

func badURL(msg string) error {
	return &hold.UsageError{Msg: "invalid etcd server URL: " + msg, Class: hold.ErrInvalidServerURL}
}

// parseTarget parses etcd://HOST:PORT[,HOST:PORT…][/PREFIX] (and etcds://).
// Credentials, queries and fragments are refused rather than ignored: a
// password in a URL ends up in process listings and in every event line.
func parseTarget(raw string) (target, error) {
	var t target
	// Schemes are case-insensitive, as in every URL.
	scheme, rest, ok := strings.Cut(raw, "://")
	switch scheme = strings.ToLower(scheme); {
	case ok && scheme == "etcds":
		t.tls = true
	case ok && scheme == "etcd+unix":
		t.unix = true
	case !ok || scheme != "etcd":
		return target{}, badURL("want etcd://HOST:PORT[,HOST:PORT…][/PREFIX], etcds://… or etcd+unix://%2FSOCKET[,%2FSOCKET…][/PREFIX]")
	}
	if strings.ContainsAny(rest, "?#") {
		return target{}, &hold.UsageError{Msg: "etcd server URL must not contain a query or fragment", Class: hold.ErrServerQuery}
	}
	hosts, path, _ := strings.Cut(rest, "/")
	if strings.Contains(hosts, "@") {
		return target{}, &hold.UsageError{Msg: "etcd server URL must not contain credentials; put user:password in the file named by OCTOSTORE_TOKEN_FILE",
			Class: hold.ErrServerCredentials}
	}
	parse := parseEndpoint
	if t.unix {
		parse = parseSocket
	}
	for _, h := range strings.Split(hosts, ",") {
		ep, err := parse(h)
		if err != nil {
			return target{}, err
		}
		t.endpoints = append(t.endpoints, ep)
	}
	prefix, err := parsePrefix(path)
	if err != nil {
		return target{}, err
	}
	t.prefix = prefix
	return t, nil
}

func parseEndpoint(h string) (string, error) {
	if h == "" {
		return "", badURL("empty member address")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: the whole thing is the host (IPv6 only in brackets).
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), defaultPort
		if strings.Contains(host, ":") && !strings.HasPrefix(h, "[") {
			return "", badURL("IPv6 member address " + strconv.Quote(h) + " must be in brackets")
		}
	}
	if host == "" {
		return "", badURL("empty host in " + strconv.Quote(h))
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", badURL("invalid port in " + strconv.Quote(h))
	}
	host = strings.ToLower(host)
	if a, err := netip.ParseAddr(host); err == nil {
		host = a.String()
	} else if strings.ContainsAny(host, "/\\ %[]") {
		return "", badURL("invalid host " + strconv.Quote(host))
	}
	return net.JoinHostPort(host, port), nil
}

// parseSocket takes a member of etcd+unix://: a percent-encoded absolute
// path of a unix socket, as etcd serves one (--listen-client-urls
// unix://NAME:PORT makes the socket NAME:PORT in etcd's working directory).
func parseSocket(h string) (string, error) {
	p, err := url.PathUnescape(h)
	switch {
	case err != nil:
		return "", badURL("invalid percent-encoding in " + strconv.Quote(h))
	case !strings.HasPrefix(p, "/"):
		return "", badURL("socket " + strconv.Quote(p) + " is not an absolute path (encode its slashes: %2Frun%2Fetcd.sock)")
	case strings.ContainsAny(p, "\x00,"):
		return "", badURL("invalid socket path " + strconv.Quote(p))
	}
	return filepath.Clean(p), nil
}

// parsePrefix: empty → /octostore; otherwise "/" + path without trailing
// slashes, no empty, "." or ".." segments (they would alias other prefixes).
func parsePrefix(path string) (string, error) {
	path = strings.TrimRight(path, "/")
	if path == "" {
		return defaultPrefix, nil
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", badURL("key prefix /" + path + " has an empty, . or .. segment")
		}
	}
	return "/" + path, nil
}

// cleartextAllowed: etcd:// sends user:password and every key in the clear,
// so only loopback members are accepted without --allow-insecure-http.
// Credentials go over it, without --allow-cleartext-credentials, only to
// loopback members, and then only on connections that root or we serve:
// verify asks for that check (verifiedTCPDial). A unix socket is not TCP:
// its server is checked instead (peerCheckedDial).
func (t target) cleartextAllowed(tr hold.Transport, credentials bool) (verify bool, err error) {
	if t.tls || t.unix {
		return false, nil
	}
	verify = credentials && !tr.AllowCleartextCredentials
	for _, ep := range t.endpoints {
		if isLoopback(ep) {
			continue
		}
		if verify {
			return false, &hold.UsageError{Msg: "refusing to send etcd credentials (" + envTokenFile + ") over cleartext etcd:// to non-loopback member " + ep +
				" (anyone on the way can read them); use etcds:// (TLS), or --allow-cleartext-credentials to accept that", Class: hold.ErrCleartextCapability}
		}
		if !tr.AllowInsecureHTTP {
			return false, &hold.UsageError{Msg: "refusing cleartext etcd:// to non-loopback member " + ep +
				"; use etcds:// (TLS), loopback members, or --allow-insecure-http for development", Class: hold.ErrCleartextCapability}
		}
	}
	return verify, nil
}

// isLoopback: a member named by a loopback IP or "localhost".
func isLoopback(endpoint string) bool {
	host, _, _ := net.SplitHostPort(endpoint)
	a, err := netip.ParseAddr(host)
	return (err == nil && a.IsLoopback()) || host == "localhost"
}
