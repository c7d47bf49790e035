package hold

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// election create --json re-serializes the 201 body in struct order; missing
// fields are malformed.
func TestElectionCreatedDecodeAndJSON(t *testing.T) {
	body := `{"watch_path":"/elections/R/watch","status_path":"/elections/R","campaign_path":"/elections/R/campaign","election_id":"R","extra":1}`
	e, err := decodeElectionCreated([]byte(body))
	require.NoError(t, err)
	require.Equal(t,
		`{"election_id":"R","campaign_path":"/elections/R/campaign","status_path":"/elections/R","watch_path":"/elections/R/watch"}`,
		string(e.JSON()))
	for _, bad := range []string{
		`{"election_id":"R","campaign_path":"c","status_path":"s"}`,
		`{"election_id":7,"campaign_path":"c","status_path":"s","watch_path":"w"}`,
		`[]`, `null`, ``,
	} {
		_, err := decodeElectionCreated([]byte(bad))
		require.Error(t, err, bad)
	}
}

// election status --json is struct order with leader omitted when vacant;
// the watch snapshot of the same status has alphabetical keys everywhere.
func TestElectionStatusRenderings(t *testing.T) {
	for _, c := range []struct {
		name, body, json, snapshot, human string
	}{
		{
			name:     "vacant",
			body:     `{"election_id":"ROOM","status":"vacant","retry_after_ms":0}`,
			json:     `{"election_id":"ROOM","status":"vacant","retry_after_ms":0}`,
			snapshot: `{"election_id":"ROOM","retry_after_ms":0,"status":"vacant"}`,
		},
		{
			name:     "vacant with explicit null leader",
			body:     `{"election_id":"ROOM","status":"vacant","leader":null,"retry_after_ms":0}`,
			json:     `{"election_id":"ROOM","status":"vacant","retry_after_ms":0}`,
			snapshot: `{"election_id":"ROOM","retry_after_ms":0,"status":"vacant"}`,
		},
		{
			name: "leader, offset timestamp normalized to Z",
			body: `{"election_id":"ROOM","status":"leader","leader":{"candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T14:00:45.501234567+02:00"},"retry_after_ms":29874}`,
			json: `{"election_id":"ROOM","status":"leader","leader":{"candidate_id":"agent-a","term":12,"expires_at":"2026-08-02T12:00:45.501234567Z"},"retry_after_ms":29874}`,
			snapshot: `{"election_id":"ROOM","leader":{"candidate_id":"agent-a","expires_at":"2026-08-02T12:00:45.501234567Z","term":12},` +
				`"retry_after_ms":29874,"status":"leader"}`,
		},
		{
			name: "leader with metadata and AutoSi millis",
			body: `{"election_id":"ROOM","status":"leader","leader":{"candidate_id":"a","metadata":"<m&>","term":3,"expires_at":"2026-08-02T12:00:00.5Z"},"retry_after_ms":1}`,
			json: `{"election_id":"ROOM","status":"leader","leader":{"candidate_id":"a","metadata":"<m&>","term":3,"expires_at":"2026-08-02T12:00:00.500Z"},"retry_after_ms":1}`,
			snapshot: `{"election_id":"ROOM","leader":{"candidate_id":"a","expires_at":"2026-08-02T12:00:00.500Z","metadata":"<m&>","term":3},` +
				`"retry_after_ms":1,"status":"leader"}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := decodeElectionStatus([]byte(c.body))
			require.NoError(t, err)
			require.Equal(t, c.json, string(s.JSON()))
			require.Equal(t, c.snapshot, string(s.Snapshot()))
		})
	}
}

func TestElectionStatusMalformed(t *testing.T) {
	for _, bad := range []string{
		`{"status":"vacant","retry_after_ms":0}`,
		`{"election_id":"R","retry_after_ms":0}`,
		`{"election_id":"R","status":"vacant"}`,
		`{"election_id":"R","status":"vacant","retry_after_ms":-1}`,
		`{"election_id":"R","status":"vacant","retry_after_ms":1.5}`,
		`{"election_id":"R","status":"leader","leader":{"candidate_id":"a","expires_at":"2026-08-02T12:00:00Z"},"retry_after_ms":0}`,
		`{"election_id":"R","status":"leader","leader":{"candidate_id":"a","term":1,"expires_at":"yesterday"},"retry_after_ms":0}`,
		`{"election_id":"R","status":"leader","leader":{"term":1,"expires_at":"2026-08-02T12:00:00Z"},"retry_after_ms":0}`,
	} {
		_, err := decodeElectionStatus([]byte(bad))
		require.Error(t, err, bad)
	}
}

// lock status --json: alphabetical keys, nulls kept, acl first when present,
// and the bearer token redacted from every string value at any depth (not
// from keys).
func TestLockStatusJSONRedacts(t *testing.T) {
	const tok = "s3cret-T0KEN"
	for _, c := range []struct {
		name, body, want string
	}{
		{
			name: "free",
			body: `{"name":"repo/x","status":"free","holder_id":null,"fencing_token":43,"expires_at":null,"metadata":null}`,
			want: `{"expires_at":null,"fencing_token":43,"holder_id":null,"metadata":null,"name":"repo/x","status":"free"}`,
		},
		{
			name: "held, absent optionals print null",
			body: `{"name":"repo/x","status":"held","fencing_token":42,"holder_id":"h-1","expires_at":"2026-08-02T12:02:15.600000123Z"}`,
			want: `{"expires_at":"2026-08-02T12:02:15.600000123Z","fencing_token":42,"holder_id":"h-1","metadata":null,"name":"repo/x","status":"held"}`,
		},
		{
			name: "reflected token everywhere",
			body: `{"name":"n-` + tok + `","status":"held","holder_id":"` + tok + `","fencing_token":1,"expires_at":"2026-08-02T12:00:00Z","metadata":"a ` + tok + ` b ` + tok + `",` +
				`"acl":{"zeta":["token:` + tok + `",2,true,null],"` + tok + `":{"b":1,"a":"x"}}}`,
			want: `{"acl":{"` + tok + `":{"a":"x","b":1},"zeta":["token:[REDACTED]",2,true,null]},"expires_at":"2026-08-02T12:00:00Z","fencing_token":1,` +
				`"holder_id":"[REDACTED]","metadata":"a [REDACTED] b [REDACTED]","name":"n-[REDACTED]","status":"held"}`,
		},
		{
			name: "null acl is absent; big integers stay exact",
			body: `{"name":"x","status":"free","fencing_token":18446744073709551615,"acl":null}`,
			want: `{"expires_at":null,"fencing_token":18446744073709551615,"holder_id":null,"metadata":null,"name":"x","status":"free"}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := decodeLockStatus([]byte(c.body))
			require.NoError(t, err)
			require.Equal(t, c.want, string(s.JSON(tok)))
		})
	}
	for _, bad := range []string{
		`{"status":"free","fencing_token":1}`,
		`{"name":"x","fencing_token":1}`,
		`{"name":"x","status":"free"}`,
		`{"name":"x","status":"free","fencing_token":-1}`,
		`{"name":"x","status":"free","fencing_token":1,"holder_id":5}`,
		`{"name":"x","status":"free","fencing_token":1,"expires_at":"soon"}`,
	} {
		_, err := decodeLockStatus([]byte(bad))
		require.Error(t, err, bad)
	}
}

// Strings are written as serde_json writes them: no HTML escaping, U+2028/9
// raw, control characters escaped; an escaped backslash before "u2028" text
// stays escaped.
func TestJSONWriterMatchesSerde(t *testing.T) {
	for in, want := range map[string]string{
		"<a>&b":             `"<a>&b"`,
		"l\u2028p\u2029":    "\"l\u2028p\u2029\"",
		`\u2028`:            `"\\u2028"`,
		"q\"\\\n\t\x01\x7f": `"q\"\\\n\t\u0001` + "\x7f\"",
	} {
		var w jsonWriter
		w.str(in)
		require.Equal(t, want, string(w.bytes()), "%q", in)
	}
}

func TestTerminalSafe(t *testing.T) {
	require.Equal(t, `agent\n\u{1b}[31m\t\r\u{7f}\u{85}ok·`, TerminalSafe("agent\n\x1b[31m\t\r\x7f\u0085ok·"))
}

// The human election status line uses chrono's to_rfc3339: AutoSi digits,
// "+00:00" instead of "Z".
func TestRFC3339Offset(t *testing.T) {
	ts := time.Date(2026, 8, 2, 12, 0, 45, 501234567, time.UTC)
	require.Equal(t, "2026-08-02T12:00:45.501234567+00:00", RFC3339Offset(ts))
	require.Equal(t, "2026-08-02T12:00:45+00:00", RFC3339Offset(ts.Truncate(time.Second)))
	require.Equal(t, "2026-08-02T12:00:45.500+00:00", RFC3339Offset(ts.Truncate(100*time.Millisecond)))
}
