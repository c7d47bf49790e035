package local

import (
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/octostore-supervisor/supervisor/hold"
)

func localEnv(m map[string]string) hold.LookupEnv {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// requireUsage checks that err is a one-line *UsageError of class (exit 64).
func requireLocalUsage(t *testing.T, err error, class error, contains string) {
	t.Helper()
	require.Error(t, err)
	var ue *hold.UsageError
	require.True(t, errors.As(err, &ue), "want *UsageError, got %T: %v", err, err)
	require.ErrorIs(t, err, class)
	require.Equal(t, hold.ExitUsage, ue.ExitCode())
	require.NotContains(t, ue.Error(), "\n")
	require.Contains(t, ue.Error(), contains)
}

func TestLocalNameEscaping(t *testing.T) {
	cases := map[string]string{
		"agent-room_1.x":             "agent-room_1.x",
		"g15BTc54MStBoX":             "g15%42%54c54%4D%53t%42o%58",
		"repo/octostore/issue-1842":  "repo%2Foctostore%2Fissue-1842",
		".hidden":                    "%2Ehidden",
		"a..b":                       "a..b",
		"...":                        "%2E..",
		"con":                        "%63on",
		"nul.txt":                    "%6Eul.txt",
		"com7":                       "%63om7",
		"console":                    "console",
		"%41":                        "%2541",
		"grüße":                      "gr%C3%BC%C3%9Fe",
		"sp ace\ttab":                "sp%20ace%09tab",
		"ends-with-dot.":             "ends-with-dot.",
		"back\\slash":                "back%5Cslash",
		"x:y":                        "x%3Ay",
		"a//b":                       "a%2F%2Fb",
		strings.Repeat("a", 244):     strings.Repeat("a", 244),
		strings.Repeat("é", 40) + "": strings.Repeat("%C3%A9", 40),
	}
	for name, want := range cases {
		got, err := escapeName(name)
		require.NoError(t, err, name)
		require.Equal(t, want, got, name)
		// Decoding gives the name back (the mapping is injective), and the
		// result is one plain file-name component.
		back, err := url.PathUnescape(got)
		require.NoError(t, err)
		require.Equal(t, name, back)
		require.NotContains(t, got, "/")
		require.NotContains(t, got, `\`)
		require.False(t, strings.HasPrefix(got, "."), got)
	}
	// Names differing only in case stay distinct after case folding, which
	// is what a case-insensitive file system does to them.
	seen := map[string]string{}
	for _, n := range []string{"abc", "ABC", "Abc", "aBc", "%41bc", "%61bc", "con", "CON", "%63on"} {
		e, err := escapeName(n)
		require.NoError(t, err)
		f := strings.ToLower(e)
		if prev, dup := seen[f]; dup {
			t.Fatalf("%q and %q collide as %q on a case-insensitive file system", prev, n, f)
		}
		seen[f] = n
	}
}

func TestLocalNameTraversalRefused(t *testing.T) {
	for _, name := range []string{"..", ".", "../etc", "a/../../b", "a/./b", "/etc/passwd", `..\windows`, `a\..\b`, `\x`, "a/.."} {
		_, err := escapeName(name)
		requireLocalUsage(t, err, errName, "would escape the local state directory")
		requireLocalUsage(t, ValidateName(name), errName, "escape")
	}
	requireLocalUsage(t, ValidateName(""), errName, "must not be empty")
	requireLocalUsage(t, ValidateName("a\x00b"), errName, "NUL")
	requireLocalUsage(t, ValidateName(strings.Repeat("a", 245)), errName, "too long")
	requireLocalUsage(t, ValidateName(strings.Repeat("A", 82)), errName, "246 bytes once escaped")
}

func TestLocalServerSelection(t *testing.T) {
	for s, want := range map[string]bool{
		"local": true, " local ": true, "file:///tmp/x": true, "FILE:///tmp/x": true, "file:rel": true,
		"Local": false, "https://api.octostore.io": false, "http://local": false, "": false, "localhost": false,
	} {
		require.Equal(t, want, IsServer(s), s)
	}
}

func TestLocalFileURLRules(t *testing.T) {
	dir := tempDir(t)
	requireLocalUsage(t, openBad(t, "file://otherhost"+fileURLPath(dir)), hold.ErrInvalidServerURL, "absolute local directory")
	requireLocalUsage(t, openBad(t, "file:relative/dir"), hold.ErrInvalidServerURL, "absolute local directory")
	requireLocalUsage(t, openBad(t, "file://user@"+fileURLPath(dir)), hold.ErrServerCredentials, "credentials")
	requireLocalUsage(t, openBad(t, "file://"+fileURLPath(dir)+"?x=1"), hold.ErrServerQuery, "query or fragment")
	requireLocalUsage(t, openBad(t, "file://"+fileURLPath(dir)+"#"), hold.ErrServerQuery, "query or fragment")
	requireLocalUsage(t, openBad(t, "file://"+fileURLPath(dir)+"%00x"), hold.ErrInvalidServerURL, "absolute local directory")
	requireLocalUsage(t, openBad(t, "file://"+fileURLPath(filepath.Join(dir, "missing"))), errStateDir, "does not exist")

	// Normalised: dot segments and trailing slashes go, localhost is dropped,
	// percent-escapes are decoded and re-encoded canonically.
	sub := filepath.Join(dir, "shared dir")
	require.NoError(t, os.Mkdir(sub, 0o770))
	s, err := Open("file://localhost"+fileURLPath(dir)+"/x/../shared%20dir/", nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	require.Equal(t, sub, s.Dir())
	require.Equal(t, "file://"+fileURLPath(dir)+"/shared%20dir", s.Server())
	for _, d := range []string{electionsDir, locksDir} {
		fi, err := os.Lstat(filepath.Join(sub, d))
		require.NoError(t, err)
		require.True(t, fi.IsDir())
	}
}

func openBad(t *testing.T, raw string) error {
	t.Helper()
	s, err := Open(raw, nil)
	if err == nil {
		s.Close()
	}
	return err
}

func TestLocalStatusJSONShapes(t *testing.T) {
	at := time.Date(2026, 8, 2, 12, 0, 0, 0, time.UTC)
	exp := at.Add(29874 * time.Millisecond)
	holder := &Holder{CandidateID: "agent-a", HolderID: "h1", Term: 12, PID: 4242, AcquiredAt: at, ExpiresAt: exp}

	vacant := Status{Kind: hold.KindElection, Name: "ROOM", NextTerm: 13, ObservedAt: at}
	require.Equal(t, `{"election_id":"ROOM","status":"vacant","retry_after_ms":0}`, string(vacant.JSON()))
	require.Equal(t, "ROOM · vacant · authority local", vacant.humanLine("local"))

	leader := Status{Kind: hold.KindElection, Name: "ROOM", Held: true, Holder: holder, ObservedAt: at}
	require.Equal(t, `{"election_id":"ROOM","status":"leader","leader":{"candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:29.874Z","pid":4242},"retry_after_ms":29874}`, string(leader.JSON()))
	require.Equal(t, "ROOM · leader agent-a · term 12 · pid 4242 · expires 2026-08-02T12:00:29.874Z · authority local", leader.humanLine("local"))

	unknown := Status{Kind: hold.KindElection, Name: "ROOM", Held: true, ObservedAt: at}
	require.Equal(t, `{"election_id":"ROOM","status":"leader","retry_after_ms":0}`, string(unknown.JSON()))

	free := Status{Kind: hold.KindLock, Name: "repo/x<y>", NextTerm: 43, ObservedAt: at}
	require.Equal(t, `{"expires_at":null,"fencing_token":43,"holder_id":null,"metadata":null,"name":"repo/x<y>","status":"free"}`, string(free.JSON()))
	held := Status{Kind: hold.KindLock, Name: "repo/x", Held: true, Holder: &Holder{HolderID: "h2", Term: 42, PID: 7, ExpiresAt: exp}, ObservedAt: at}
	require.Equal(t, `{"expires_at":"2026-08-02T12:00:29.874Z","fencing_token":42,"holder_id":"h2","metadata":null,"name":"repo/x","pid":7,"status":"held"}`, string(held.JSON()))
	require.Equal(t, "repo/x · held · term 42 · pid 7 · authority file:///srv/x", held.humanLine("file:///srv/x"))
	require.Equal(t, `a\nb\u{1b} · free · authority local`, Status{Kind: hold.KindLock, Name: "a\nb\x1b"}.humanLine("local"))

	require.Equal(t, `{"election_id":"ROOM","leader":{"candidate_id":"agent-a","expires_at":"2026-08-02T12:00:29.874Z","pid":4242,"term":12},"retry_after_ms":29874,"status":"leader"}`, string(leader.snapshotJSON()))
	require.Equal(t, string(held.JSON()), string(held.snapshotJSON()))
	var m map[string]any
	require.NoError(t, json.Unmarshal(leader.JSON(), &m))
}

func durPtr(d time.Duration) *time.Duration { return &d }
