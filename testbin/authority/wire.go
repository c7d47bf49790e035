package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"
)

// marshal encodes compactly without HTML escaping, matching serde_json for
// everything a test can reach (docs/protocol.md "JSON encoding"). Structs keep
// field order (the server's struct order); maps are sorted by encoding/json,
// which gives the alphabetical order of bodies built from a generic JSON value.
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

// newRequestID is req_ + a v4 UUID in simple (unhyphenated) lowercase form
// (docs/protocol.md "Request IDs").
func newRequestID() string {
	u := newUUID()
	return "req_" + hex.EncodeToString(u[:])
}

// pseudonym derives a UUID-shaped public identifier (version nibble 8) from an
// internal identity, like the server's holder_id, so tests can check that the
// session ID never leaks as holder_id
// (docs/protocol.md "Lock names and leases").
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
