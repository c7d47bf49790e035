package events

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func elWithKey(seq int, event string, term int, key string) string {
	return el(seqf(seq) + `,"event":"` + event + `","term":` + strconv.Itoa(term) + `,"fencing_key":` + key + `,` + auth(3000))
}

// The etcd authority names the holder key beside the term; the supervisor
// hands it to the worker, so it must be a usable environment value and must
// not change while the term lasts.
func TestStreamFencingKey(t *testing.T) {
	s := NewStream(electionTarget())
	ev, err := s.Next([]byte(elWithKey(1, "leader", 7, `"/octostore/election/room/694d8a3b"`)))
	require.NoError(t, err)
	require.Equal(t, "/octostore/election/room/694d8a3b", ev.FencingKey)
	runSteps(t, s, []step{
		ok(elWithKey(2, "renewed", 7, `"/octostore/election/room/694d8a3b"`)),
		ok(el(seqf(3) + `,"event":"renewed","term":7,` + auth(3000))),
		bad(elWithKey(4, "renewed", 7, `"/octostore/election/room/other"`), "renewed event changed the fencing key"),
	})

	for name, key := range map[string]string{"empty": `""`, "NUL": `"a\u0000b"`, "number": `7`, "null": `null`} {
		t.Run(name, func(t *testing.T) {
			_, err := NewStream(electionTarget()).Next([]byte(elWithKey(1, "leader", 7, key)))
			requireClass(t, err, ErrInvalid, msgMalformed)
		})
	}
}

func TestHoldEventEncodesFencingKeyAfterTerm(t *testing.T) {
	term := uint64(9)
	line := HoldEvent{Event: Event{Sequence: 2, Event: Acquired, Kind: Lock, Name: "n", Server: "etcd://127.0.0.1:2379/octostore",
		Term: &term, FencingKey: "/octostore/lock/n/1f"}, ObservedAt: time.Unix(0, 0)}.Encode()
	require.Equal(t, `{"schema_version":1,"sequence":2,"event":"acquired","kind":"lock","name":"n","server":"etcd://127.0.0.1:2379/octostore","term":9,"fencing_key":"/octostore/lock/n/1f","observed_at":"1970-01-01T00:00:00Z"}`+"\n", string(line))
}
