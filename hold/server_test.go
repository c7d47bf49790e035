package hold

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func strp(s string) *string { return &s }

func TestResolveServer(t *testing.T) {
	cases := []struct {
		name string
		flag *string
		env  string
		kind Kind
		want string
		err  string
	}{
		{"flag wins", strp("https://a.example"), "https://b.example", KindElection, "https://a.example", ""},
		{"empty flag still wins", strp(""), "https://b.example", KindLock, "", ""},
		{"env used", nil, "https://b.example", KindLock, "https://b.example", ""},
		{"env kept raw", nil, " https://b.example/ ", KindElection, " https://b.example/ ", ""},
		{"empty env election default", nil, "", KindElection, DefaultElectionServer, ""},
		{"blank env election default", nil, " \t\n", KindElection, DefaultElectionServer, ""},
		{"non-utf8 env ignored", nil, "http://\xff", KindElection, DefaultElectionServer, ""},
		{"lock needs server", nil, "", KindLock, "", "lock commands require --server or OCTOSTORE_URL"},
		{"lock blank env", nil, "   ", KindLock, "", "lock commands require --server or OCTOSTORE_URL"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResolveServer(tc.flag, tc.env, tc.kind)
			if tc.err != "" {
				requireUsage(t, err, errNoLockServer, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			// ServerDefaulted says exactly when the hosted default was chosen
			// (the election hold's unreachable hint depends on it).
			if tc.kind == KindElection {
				require.Equal(t, got == DefaultElectionServer, ServerDefaulted(tc.flag != nil, tc.env))
			}
		})
	}
}

func TestValidateServerNormalisation(t *testing.T) {
	cases := []struct {
		in       string
		want     string
		loopback bool
	}{
		{"https://api.octostore.io/", "https://api.octostore.io", false},
		{"https://api.octostore.io", "https://api.octostore.io", false},
		{"http://localhost:3000/base/", "http://localhost:3000/base", true},
		{"http://localhost:3000/base///", "http://localhost:3000/base", true},
		{"HTTPS://API.OctoStore.IO:443/", "https://api.octostore.io", false},
		{"http://example.com:80/", "http://example.com", false},
		{"https://example.com:80", "https://example.com:80", false},
		{"http://example.com:0080/x", "http://example.com/x", false},
		{"https://example.com:", "https://example.com", false},
		{"  https://example.com/a\t/b\n  ", "https://example.com/a/b", false},
		{"https:example.com", "https://example.com", false},
		{"https:\\\\example.com\\a\\b", "https://example.com/a/b", false},
		{"https://example.com/a/./b/../c/", "https://example.com/a/c", false},
		{"https://example.com/a/%2e%2E/c", "https://example.com/c", false},
		{"https://example.com/a b/{x}", "https://example.com/a%20b/%7Bx%7D", false},
		{"https://example.com/%41", "https://example.com/%41", false},
		{"https://@example.com", "https://example.com", false},
		{"https://:@example.com", "https://example.com", false},
		{"https://ex%41mple.com", "https://example.com", false},
		{"http://127.0.0.1:3000", "http://127.0.0.1:3000", true},
		{"http://127.1:3000", "http://127.0.0.1:3000", true},
		{"http://0x7f.0.0.1", "http://127.0.0.1", true},
		{"http://2130706433/", "http://127.0.0.1", true},
		{"http://0177.0.0.1", "http://127.0.0.1", true},
		{"http://127.0.0.1.", "http://127.0.0.1", true},
		{"http://127.255.255.254", "http://127.255.255.254", true},
		{"http://[::1]:8080/", "http://[::1]:8080", true},
		{"http://[0:0:0:0:0:0:0:1]", "http://[::1]", true},
		{"http://LOCALHOST", "http://localhost", true},
		{"https://[::ffff:127.0.0.1]", "https://[::ffff:7f00:1]", false},
		{"https://[2001:DB8:0:0:1:0:0:1]", "https://[2001:db8::1:0:0:1]", false},
		{"https://foo.localhost", "https://foo.localhost", false},
		{"https://localhost.", "https://localhost.", false},
		{"https://128.0.0.1", "https://128.0.0.1", false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			s, err := ValidateServer(tc.in, false, false)
			require.NoError(t, err)
			require.Equal(t, tc.want, s.URL)
			require.Equal(t, tc.loopback, s.Loopback)
			require.Equal(t, tc.want[:5] == "https", s.HTTPS)
		})
	}
}

func TestValidateServerErrors(t *testing.T) {
	const cleartext = "refusing to send a secret capability over cleartext HTTP; use HTTPS, loopback, or --allow-insecure-http for development"
	cases := []struct {
		in    string
		class error
		msg   string
	}{
		{"", ErrInvalidServerURL, "invalid server URL: relative URL without a base"},
		{"api.octostore.io", ErrInvalidServerURL, "invalid server URL: relative URL without a base"},
		{"/path", ErrInvalidServerURL, "invalid server URL: relative URL without a base"},
		{"https://", ErrInvalidServerURL, "invalid server URL: empty host"},
		{"https://user@", ErrInvalidServerURL, "invalid server URL: empty host"},
		{"https://host:99999", ErrInvalidServerURL, "invalid server URL: invalid port number"},
		{"https://host:8o", ErrInvalidServerURL, "invalid server URL: invalid port number"},
		{"https://[::1", ErrInvalidServerURL, "invalid server URL: invalid IPv6 address"},
		{"https://[fe80::1%25eth0]", ErrInvalidServerURL, "invalid server URL: invalid IPv6 address"},
		{"https://256.0.0.1", ErrInvalidServerURL, "invalid server URL: invalid IPv4 address"},
		{"https://1.2.3.4.5", ErrInvalidServerURL, "invalid server URL: invalid IPv4 address"},
		{"https://foo.09", ErrInvalidServerURL, "invalid server URL: invalid IPv4 address"},
		{"https://ex ample.com", ErrInvalidServerURL, "invalid server URL: invalid domain character"},
		{"https://exa%20mple.com", ErrInvalidServerURL, "invalid server URL: invalid domain character"},
		{"https://bücher.example", ErrInvalidServerURL, "invalid server URL: invalid international domain name"},
		{"https://user@example.com", ErrServerCredentials, "credentials are not allowed in the server URL"},
		{"https://user:pw@example.com", ErrServerCredentials, "credentials are not allowed in the server URL"},
		{"https://:pw@example.com", ErrServerCredentials, "credentials are not allowed in the server URL"},
		{"https://user@example.com/?q", ErrServerCredentials, "credentials are not allowed in the server URL"},
		{"https://example.com?", ErrServerQuery, "server URL must not contain a query or fragment"},
		{"https://example.com#", ErrServerQuery, "server URL must not contain a query or fragment"},
		{"https://example.com/x?a=b", ErrServerQuery, "server URL must not contain a query or fragment"},
		{"https://example.com/#frag", ErrServerQuery, "server URL must not contain a query or fragment"},
		{"https://a#b@example.com", ErrServerQuery, "server URL must not contain a query or fragment"},
		{"ftp://example.com", ErrServerScheme, "server URL must use http or https"},
		{"localhost:3000", ErrServerScheme, "server URL must use http or https"},
		{"ws://localhost", ErrServerScheme, "server URL must use http or https"},
		{"ftp://user@example.com", ErrServerCredentials, "credentials are not allowed in the server URL"},
		{"mailto:x?y", ErrServerQuery, "server URL must not contain a query or fragment"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			_, err := ValidateServer(tc.in, true, false)
			requireUsage(t, err, tc.class, tc.msg)
		})
	}

	// Capability rules.
	capCases := []struct {
		in                        string
		capability, allowInsecure bool
		refused                   bool
	}{
		{"http://example.com", true, false, true},
		{"http://example.com", true, true, false},
		{"http://example.com", false, false, false},
		{"https://example.com", true, false, false},
		{"http://localhost:3000", true, false, false},
		{"http://127.0.0.1", true, false, false},
		{"http://127.9.9.9", true, false, false},
		{"http://[::1]", true, false, false},
		{"http://[::ffff:127.0.0.1]", true, false, true},
		{"http://app.localhost", true, false, true},
		{"http://localhost.", true, false, true},
		{"http://10.0.0.1", true, false, true},
		{"http://[::2]", true, false, true},
	}
	for _, tc := range capCases {
		_, err := ValidateServer(tc.in, tc.capability, tc.allowInsecure)
		if tc.refused {
			requireUsage(t, err, ErrCleartextCapability, cleartext)
		} else {
			require.NoError(t, err, tc.in)
		}
	}
}

func TestServerEndpoint(t *testing.T) {
	s, err := ValidateServer("http://localhost:3000/base/", true, false)
	require.NoError(t, err)
	require.Equal(t, "http://localhost:3000/base/locks/a%2Fb/acquire", s.endpoint("/locks/"+EncodeSegment("a/b")+"/acquire"))
	require.Equal(t, s.URL, s.String())
}
