package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// formatTime renders t the way chrono serializes DateTime<Utc> (§0.1): UTC,
// literal Z, and "AutoSi" fractions — none when the nanoseconds are zero,
// else the shortest of 3, 6 or 9 digits that is exact. time.RFC3339Nano
// trims trailing zeros to any width, so it cannot be used.
func formatTime(t time.Time) string {
	t = t.UTC()
	base := t.Format("2006-01-02T15:04:05")
	ns := t.Nanosecond()
	switch {
	case ns == 0:
		return base + "Z"
	case ns%1_000_000 == 0:
		return fmt.Sprintf("%s.%03dZ", base, ns/1_000_000)
	case ns%1_000 == 0:
		return fmt.Sprintf("%s.%06dZ", base, ns/1_000)
	default:
		return fmt.Sprintf("%s.%09dZ", base, ns)
	}
}

// marshal encodes compactly without HTML escaping, matching serde_json for
// everything a test can reach (§0.1). Structs keep field order (the server's
// struct order); maps are sorted by encoding/json, which gives the
// alphabetical order of bodies built from a generic JSON value.
func marshal(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only our own types are encoded; a failure is a bug
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

type uuid [16]byte

func newUUID() uuid {
	var u uuid
	if _, err := rand.Read(u[:]); err != nil {
		panic(err)
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

func (u uuid) String() string {
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// parseUUID accepts the forms the uuid crate accepts for serde input that a
// client could plausibly send: hyphenated or simple, either case.
func parseUUID(s string) (uuid, bool) {
	var u uuid
	s = strings.ReplaceAll(s, "-", "")
	if len(s) != 32 {
		return u, false
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return u, false
	}
	copy(u[:], b)
	return u, true
}

// newRequestID is req_ + a v4 UUID in simple (unhyphenated) lowercase form (§0.2).
func newRequestID() string {
	u := newUUID()
	return "req_" + hex.EncodeToString(u[:])
}

// pseudonym derives a UUID-shaped public identifier (version nibble 8) from
// an internal identity, like the server's holder_id, so tests can check that
// the session ID never leaks as holder_id (§2.2).
func pseudonym(domain, internal string) string {
	sum := sha256.Sum256([]byte("octostore-fake/" + domain + "\x00" + internal))
	var u uuid
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0f | 0x80
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}

// msUntil is the whole milliseconds from now to t, floored at 0.
func msUntil(now, t time.Time) int64 {
	d := t.Sub(now)
	if d < 0 {
		return 0
	}
	return d.Milliseconds()
}
