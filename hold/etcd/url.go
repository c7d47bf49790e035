package etcd

import (
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/octostore-supervisor/supervisor/hold"
)

const (
	defaultPort   = "2379"
	defaultPrefix = "/octostore"
)

// target is a parsed --server etcd://… or etcds://… value.
type target struct {
	tls       bool
	endpoints []string // host:port, hosts lower-cased, IPv6 in brackets
	prefix    string   // starts with '/', no trailing '/'
}

// server is the normalized URL without credentials: what every event's
// server field shows.
func (t target) server() string {
	scheme := "etcd://"
	if t.tls {
		scheme = "etcds://"
	}
	return scheme + strings.Join(t.endpoints, ",") + t.prefix
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
	case !ok || scheme != "etcd":
		return target{}, badURL("want etcd://HOST:PORT[,HOST:PORT…][/PREFIX] or etcds://…")
	}
	if strings.ContainsAny(rest, "?#") {
		return target{}, &hold.UsageError{Msg: "etcd server URL must not contain a query or fragment", Class: hold.ErrServerQuery}
	}
	hosts, path, _ := strings.Cut(rest, "/")
	if strings.Contains(hosts, "@") {
		return target{}, &hold.UsageError{Msg: "etcd server URL must not contain credentials; put user:password in the file named by OCTOSTORE_TOKEN_FILE",
			Class: hold.ErrServerCredentials}
	}
	for _, h := range strings.Split(hosts, ",") {
		ep, err := parseEndpoint(h)
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
func (t target) cleartextAllowed(allowInsecure bool) error {
	if t.tls || allowInsecure {
		return nil
	}
	for _, ep := range t.endpoints {
		host, _, _ := net.SplitHostPort(ep)
		if a, err := netip.ParseAddr(host); (err == nil && a.IsLoopback()) || host == "localhost" {
			continue
		}
		return &hold.UsageError{Msg: "refusing cleartext etcd:// to non-loopback member " + ep +
			"; use etcds:// (TLS), loopback members, or --allow-insecure-http for development", Class: hold.ErrCleartextCapability}
	}
	return nil
}
