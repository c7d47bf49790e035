package hold

import (
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultElectionServer is used by election commands when neither --server nor
// OCTOSTORE_URL names one (docs/protocol.md "Server selection"). Lock commands
// have no default.
const DefaultElectionServer = "https://api.octostore.io"

// ResolveServer picks the raw server string
// (docs/protocol.md "Server selection"): the --server flag when it was given at
// all (even empty: the empty string then fails validation, as upstream), else
// OCTOSTORE_URL unless it is empty or only whitespace, else the public default
// for elections; lock commands must name a server. envURL is the value of
// OCTOSTORE_URL ("" when unset); a value that is not valid UTF-8 counts as
// unset, because Rust's env::var reports it as an error that the CLI ignores.
func ResolveServer(flag *string, envURL string, kind Kind) (string, error) {
	if flag != nil {
		return *flag, nil
	}
	if !ServerDefaulted(false, envURL) {
		return envURL, nil
	}
	if kind == KindLock {
		return "", usageError(errNoLockServer, "lock commands require --server or OCTOSTORE_URL")
	}
	return DefaultElectionServer, nil
}

// ServerDefaulted reports whether ResolveServer falls back to the hosted
// default for an election: neither --server (flagSet) nor a usable
// OCTOSTORE_URL names a server, so the user may not know which one is tried.
func ServerDefaulted(flagSet bool, envURL string) bool {
	return !flagSet && !(utf8.ValidString(envURL) && strings.TrimSpace(envURL) != "")
}

// Server is a validated, normalised server URL.
type Server struct {
	// URL is the normalised form: lower-case scheme and host, default port
	// dropped, no trailing slash. It is the "server" field of every JSON line
	// and the prefix of every request URL.
	URL string
	// Loopback reports whether the host is "localhost" or a loopback IP
	// literal; it decides the cleartext exemption and the proxy bypass.
	Loopback bool
	// HTTPS reports the scheme.
	HTTPS bool
}

// String is the normalized URL, what events and human lines show.
func (s Server) String() string { return s.URL }

// endpoint joins the server and an API path that already starts with '/'.
func (s Server) endpoint(path string) string { return s.URL + path }

const cleartextMessage = "refusing to send a secret capability over cleartext HTTP; use HTTPS, loopback, or --allow-insecure-http for development"

// Transport is how a command may reach its authority: the flags every
// command that talks to one takes (holdcli.TransportFlags).
type Transport struct {
	// AllowInsecureHTTP permits cleartext (http://, etcd://) to a host
	// other than loopback (--allow-insecure-http).
	AllowInsecureHTTP bool
	// AllowCleartextCredentials permits credentials - a bearer token,
	// etcd's user:password - over cleartext TCP to another host, and to a
	// loopback port whatever user serves it (--allow-cleartext-credentials).
	// Without it, credentials go to a loopback port only when root or we
	// serve it (VerifyLoopbackPeer): while the port is free (its server down
	// or restarting) any local user may listen there and relay what arrives.
	AllowCleartextCredentials bool
}

// CheckCredentialTransport refuses a bearer token over cleartext http:// to
// a host other than loopback, unless tr allows it by name. To loopback it
// goes only to a port served by root or by us, which the client checks on
// every connection (ClientOptions.VerifyLoopbackPeer).
func CheckCredentialTransport(s Server, tr Transport) error {
	if s.HTTPS || s.Loopback || tr.AllowCleartextCredentials {
		return nil
	}
	return usageError(ErrCleartextCapability, "refusing to send the bearer token over cleartext http:// to a host other than loopback "+
		"(anyone on the way can read it); use https://, or --allow-cleartext-credentials to accept that")
}

// Origin is the server's canonical origin, its identity on this host
// (the supervisor's interlock): scheme, host and port, the default port
// written out, the base path dropped, and every loopback host ("localhost",
// 127.0.0.0/8, ::1) one name, since they are one server. It may take two
// servers for one (two base paths of one origin), never one for two.
func (s Server) Origin() string {
	host, port := s.hostAndPort()
	if isLoopbackHost(host) {
		host = "loopback"
	}
	scheme := "http"
	if s.HTTPS {
		scheme = "https"
	}
	return scheme + "://" + host + ":" + port
}

// hostPort is the address a request dials: host:port, the default port
// written out.
func (s Server) hostPort() string {
	host, port := s.hostAndPort()
	return host + ":" + port
}

// hostAndPort splits the URL's authority, IPv6 hosts keeping their
// brackets, the scheme's default port filled in.
func (s Server) hostAndPort() (host, port string) {
	rest := strings.TrimPrefix(strings.TrimPrefix(s.URL, "https://"), "http://")
	hostport, _, _ := strings.Cut(rest, "/")
	port = "80"
	if s.HTTPS {
		port = "443"
	}
	host = hostport
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		host, port = hostport[:i], hostport[i+1:]
	}
	return host, port
}

// ValidateServer parses raw like a WHATWG URL parser (the Rust url crate) for
// the http and https schemes and applies the CLI's rules in the upstream order
// (docs/protocol.md "Server selection"): parse errors, then credentials, then
// query/fragment, then scheme, then — for capability-bearing commands — the
// cleartext refusal.
//
// Go's net/url is not used for parsing because it differs from WHATWG where it
// matters here: it does not normalise IPv4 shorthand ("127.1"), does not track
// an empty fragment, rejects rather than strips tabs and newlines, and keeps
// "http://@host" as having userinfo. The subset below is what a server URL can
// meaningfully contain; non-ASCII (IDNA) host names are refused rather than
// converted to punycode.
func ValidateServer(raw string, capabilityBearing, allowInsecureHTTP bool) (Server, error) {
	u, err := parseSpecialURL(raw)
	if err != nil {
		return Server{}, err
	}
	if u.credentials {
		return Server{}, usageError(ErrServerCredentials, "credentials are not allowed in the server URL")
	}
	if u.query || u.fragment {
		return Server{}, usageError(ErrServerQuery, "server URL must not contain a query or fragment")
	}
	if u.scheme != "http" && u.scheme != "https" {
		return Server{}, usageError(ErrServerScheme, "server URL must use http or https")
	}
	loopback := isLoopbackHost(u.host)
	if capabilityBearing && u.scheme == "http" && !allowInsecureHTTP && !loopback {
		return Server{}, usageError(ErrCleartextCapability, cleartextMessage)
	}
	path := strings.TrimRight(u.path, "/")
	s := u.scheme + "://" + u.host
	if u.port != "" {
		s += ":" + u.port
	}
	s = strings.TrimRight(s+path, "/")
	return Server{URL: s, Loopback: loopback, HTTPS: u.scheme == "https"}, nil
}

// isLoopbackHost mirrors the CLI (docs/protocol.md "Server selection"):
// "localhost" exactly, or an IP literal whose address is loopback. An
// IPv4-mapped IPv6 address is deliberately not loopback (Rust's
// Ipv6Addr::is_loopback is only ::1), and netip would unmap it, so that case is
// excluded before asking.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	addr, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil || addr.Is4In6() || addr.Zone() != "" {
		return false
	}
	return addr.IsLoopback()
}

type parsedURL struct {
	scheme      string
	host        string // serialised: lower-case domain, dotted IPv4, or [ipv6]
	port        string // "" when absent or default
	path        string // percent-encoded, dot segments resolved, starts with '/'
	credentials bool
	query       bool
	fragment    bool
}

func invalidURL(reason string) error {
	return usageError(ErrInvalidServerURL, "invalid server URL: "+reason)
}

// parseSpecialURL is the WHATWG "basic URL parser" restricted to what the CLI
// can accept. For a scheme other than http/https it only extracts what the
// later checks need (credentials, query, fragment), since the URL is refused
// anyway and the refusal text depends only on those.
func parseSpecialURL(raw string) (parsedURL, error) {
	// WHATWG strips leading/trailing C0 controls and spaces and removes every
	// ASCII tab and newline before parsing.
	s := strings.TrimFunc(raw, func(r rune) bool { return r <= 0x20 })
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)

	colon := strings.IndexByte(s, ':')
	if colon <= 0 || !validScheme(s[:colon]) {
		return parsedURL{}, invalidURL("relative URL without a base")
	}
	var u parsedURL
	u.scheme = strings.ToLower(s[:colon])
	rest := s[colon+1:]
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		u.fragment = true
		rest = rest[:i]
	}
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		u.query = true
		rest = rest[:i]
	}
	if u.scheme != "http" && u.scheme != "https" {
		u.credentials = opaqueCredentials(rest)
		return u, nil
	}
	if err := u.parseAuthorityAndPath(rest); err != nil {
		return parsedURL{}, err
	}
	return u, nil
}

// opaqueCredentials: whether a URL of another scheme carries credentials.
// Only an authority ("//…") can.
func opaqueCredentials(rest string) bool {
	if !strings.HasPrefix(rest, "//") {
		return false
	}
	auth := rest[2:]
	if i := strings.IndexByte(auth, '/'); i >= 0 {
		auth = auth[:i]
	}
	at := strings.LastIndexByte(auth, '@')
	return at >= 0 && hasCredentials(auth[:at])
}

// parseAuthorityAndPath fills host, port, credentials and path of an http or
// https URL from what follows "scheme:".
func (u *parsedURL) parseAuthorityAndPath(rest string) error {
	// Special schemes ignore any number of slashes or backslashes before the
	// authority, and treat '\' like '/'.
	rest = strings.TrimLeft(rest, "/\\")
	end := strings.IndexAny(rest, "/\\")
	if end < 0 {
		end = len(rest)
	}
	authority, path := rest[:end], rest[end:]
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		u.credentials = hasCredentials(authority[:at])
		authority = authority[at+1:]
	}
	hostPart, portPart, hasPort := splitHostPort(authority)
	if hostPart == "" {
		return invalidURL("empty host")
	}
	host, err := parseHost(hostPart)
	if err != nil {
		return err
	}
	u.host = host
	if hasPort && portPart != "" {
		if u.port, err = specialPort(u.scheme, portPart); err != nil {
			return err
		}
	}
	u.path = normalizePath(path)
	return nil
}

// specialPort checks a port of digits up to 65535; the scheme's default port
// is serialised as none ("").
func specialPort(scheme, port string) (string, error) {
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return "", invalidURL("invalid port number")
		}
	}
	p, err := strconv.ParseUint(port, 10, 64)
	if err != nil || p > 65535 {
		return "", invalidURL("invalid port number")
	}
	if scheme == "http" && p == 80 || scheme == "https" && p == 443 {
		return "", nil
	}
	return strconv.FormatUint(p, 10), nil
}

func validScheme(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isASCIIAlnum(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// hasCredentials reports a non-empty username or password: WHATWG keeps
// "http://@host" and "http://:@host" credential-free.
func hasCredentials(userinfo string) bool {
	return userinfo != "" && userinfo != ":"
}

// splitHostPort splits at the first ':' outside an IPv6 bracket.
func splitHostPort(authority string) (host, port string, hasPort bool) {
	inBracket := false
	for i := 0; i < len(authority); i++ {
		switch authority[i] {
		case '[':
			inBracket = true
		case ']':
			inBracket = false
		case ':':
			if !inBracket {
				return authority[:i], authority[i+1:], true
			}
		}
	}
	return authority, "", false
}

func parseHost(h string) (string, error) {
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return "", invalidURL("invalid IPv6 address")
		}
		addr, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return "", invalidURL("invalid IPv6 address")
		}
		return "[" + serializeIPv6(addr) + "]", nil
	}
	domain := percentDecode(h)
	for i := 0; i < len(domain); i++ {
		if domain[i] >= 0x80 {
			// The url crate would apply IDNA (punycode); this client does not
			// carry an IDNA table, so it refuses instead of guessing.
			return "", invalidURL("invalid international domain name")
		}
	}
	domain = strings.ToLower(domain)
	for i := 0; i < len(domain); i++ {
		if isForbiddenDomainByte(domain[i]) {
			return "", invalidURL("invalid domain character")
		}
	}
	if endsInNumber(domain) {
		v4, ok := parseWHATWGIPv4(domain)
		if !ok {
			return "", invalidURL("invalid IPv4 address")
		}
		return v4, nil
	}
	return domain, nil
}

func isForbiddenDomainByte(c byte) bool {
	if c <= 0x20 || c == 0x7f {
		return true
	}
	return strings.IndexByte("#%/:<>?@[\\]^|", c) >= 0
}

func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// endsInNumber is the WHATWG "ends in a number checker": a host whose last
// label is numeric is an IPv4 address and must parse as one.
func endsInNumber(domain string) bool {
	labels := strings.Split(domain, ".")
	if labels[len(labels)-1] == "" {
		if len(labels) == 1 {
			return false
		}
		labels = labels[:len(labels)-1]
	}
	last := labels[len(labels)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	if strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X") {
		return strings.TrimLeft(last[2:], "0123456789abcdefABCDEF") == ""
	}
	return false
}

// parseWHATWGIPv4 accepts the legacy forms browsers accept ("127.1",
// "0x7f.0.0.1", "2130706433", octal with a leading 0) and returns dotted
// decimal, so that loopback detection and the printed server agree with the
// url crate.
func parseWHATWGIPv4(domain string) (string, bool) {
	parts := strings.Split(domain, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return "", false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseIPv4Number(p)
		if !ok {
			return "", false
		}
		nums[i] = n
	}
	for _, n := range nums[:len(nums)-1] {
		if n > 255 {
			return "", false
		}
	}
	last := nums[len(nums)-1]
	if last >= uint64(1)<<(8*(5-len(nums))) {
		return "", false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	return strconv.FormatUint(v>>24, 10) + "." + strconv.FormatUint(v>>16&255, 10) + "." +
		strconv.FormatUint(v>>8&255, 10) + "." + strconv.FormatUint(v&255, 10), true
}

func parseIPv4Number(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(p) >= 2 && (p[:2] == "0x" || p[:2] == "0X"):
		p, base = p[2:], 16
	case len(p) >= 2 && p[0] == '0':
		p, base = p[1:], 8
	}
	if p == "" {
		return 0, true
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil {
		// Also covers values beyond 64 bits, which are out of range anyway.
		return 0, false
	}
	return n, true
}

// serializeIPv6 is the WHATWG IPv6 serializer: eight lower-case hex pieces, the
// first longest run of two or more zero pieces compressed to "::", and never an
// embedded dotted IPv4 (so ::ffff:127.0.0.1 prints as ::ffff:7f00:1).
func serializeIPv6(addr netip.Addr) string {
	b := addr.As16()
	var pieces [8]uint16
	for i := range pieces {
		pieces[i] = uint16(b[2*i])<<8 | uint16(b[2*i+1])
	}
	bestStart, bestLen := -1, 1
	for i := 0; i < 8; {
		if pieces[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && pieces[j] == 0 {
			j++
		}
		if j-i > bestLen {
			bestStart, bestLen = i, j-i
		}
		i = j
	}
	var sb strings.Builder
	for i := 0; i < 8; i++ {
		if i == bestStart {
			sb.WriteString("::")
			i += bestLen - 1
			continue
		}
		if i > 0 && i != bestStart+bestLen {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(pieces[i]), 16))
	}
	return sb.String()
}

// normalizePath applies the WHATWG path rules for special schemes: '\' is a
// separator, "." and ".." segments (also percent-encoded) are resolved, and
// bytes in the path percent-encode set are escaped with upper-case hex.
func normalizePath(p string) string {
	p = strings.ReplaceAll(p, "\\", "/")
	if p == "" {
		return "/"
	}
	var out []string
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		lower := strings.ToLower(seg)
		last := i == len(segs)-1
		switch lower {
		case "..", ".%2e", "%2e.", "%2e%2e":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		case ".", "%2e":
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, encodePathSegment(seg))
		}
	}
	return "/" + strings.Join(out, "/")
}

func encodePathSegment(seg string) string {
	const hexUpper = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c < 0x20 || c > 0x7e || strings.IndexByte(" \"#<>?`{}", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hexUpper[c>>4])
			b.WriteByte(hexUpper[c&15])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
