package events

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// result is one ReadLine outcome: a line, or an error class and message.
type result struct {
	line  string
	class error
	msg   string
}

func got(line string) result { return result{line: line} }

func TestReadLine(t *testing.T) {
	eof := result{class: io.EOF}
	tooLong := result{class: ErrInvalid, msg: msgLineTooLong}
	partial := result{class: ErrInvalid, msg: msgPartialLine}
	tests := []struct {
		name    string
		input   string
		bufSize int
		limit   int
		want    []result
	}{
		{name: "two lines", input: "a\nb\n", limit: 8, want: []result{got("a"), got("b"), eof}},
		{name: "empty stream", input: "", limit: 8, want: []result{eof}},
		{name: "empty line", input: "\n", limit: 8, want: []result{got(""), eof}},
		{name: "CR kept", input: "a\r\n", limit: 8, want: []result{got("a\r"), eof}},
		{name: "partial final line", input: "abc", limit: 8, want: []result{partial}},
		{name: "partial after a good line", input: "a\nxyz", limit: 8, want: []result{got("a"), partial}},
		{name: "exactly the limit", input: "1234\n", limit: 4, want: []result{got("1234"), eof}},
		{name: "one over the limit", input: "12345\nok\n", limit: 4, want: []result{tooLong}},
		{name: "long line across buffer refills", input: strings.Repeat("x", 100) + "\nnext\n", bufSize: 16, limit: 40, want: []result{tooLong}},
		{name: "line spanning buffer refills within limit", input: strings.Repeat("y", 30) + "\n", bufSize: 16, limit: 40, want: []result{got(strings.Repeat("y", 30)), eof}},
		{name: "long unterminated final line", input: strings.Repeat("z", 50), bufSize: 16, limit: 40, want: []result{tooLong}},
		{name: "default limit", input: strings.Repeat("d", MaxLineBytes) + "\n" + strings.Repeat("d", MaxLineBytes+1) + "\n", limit: 0, want: []result{got(strings.Repeat("d", MaxLineBytes)), tooLong}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size := tt.bufSize
			if size == 0 {
				size = 4096
			}
			br := bufio.NewReaderSize(strings.NewReader(tt.input), size)
			for i, w := range tt.want {
				line, err := ReadLine(br, tt.limit)
				switch w.class {
				case nil:
					require.NoError(t, err, "read %d", i)
					require.Equal(t, w.line, string(line), "read %d", i)
					require.NotNil(t, line)
				case io.EOF:
					require.ErrorIs(t, err, io.EOF, "read %d", i)
					require.Nil(t, line)
				default:
					requireClass(t, err, w.class, w.msg)
					require.Nil(t, line)
				}
			}
		})
	}
}

// endless is a line that never ends: bytes for ever, no newline.
type endless struct{ reads int }

func (e *endless) Read(p []byte) (int, error) {
	e.reads++
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// A hold that writes one line for ever is refused once the limit is passed,
// not read for as long as it keeps writing.
func TestReadLineEndlessLineFailsAtTheLimit(t *testing.T) {
	src := &endless{}
	br := bufio.NewReaderSize(src, 4096)
	line, err := ReadLine(br, MaxLineBytes)
	requireClass(t, err, ErrInvalid, msgLineTooLong)
	require.Nil(t, line)
	require.LessOrEqual(t, src.reads, MaxLineBytes/4096+1, "read past the limit")
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestReadLineReadError(t *testing.T) {
	cause := errors.New("pipe broke")
	br := bufio.NewReader(io.MultiReader(strings.NewReader("half"), failingReader{cause}))
	_, err := ReadLine(br, MaxLineBytes)
	requireClass(t, err, ErrInvalid, msgReadFailed+": pipe broke")
	require.ErrorIs(t, err, cause)
}

func TestReadLineReturnsOwnedBytes(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("first\nsecond\n"), 16)
	a, err := ReadLine(br, 64)
	require.NoError(t, err)
	_, err = ReadLine(br, 64)
	require.NoError(t, err)
	require.Equal(t, "first", string(a), "the next read must not overwrite an earlier line")
}

func TestReadLineCRLFThroughStream(t *testing.T) {
	input := elEvent(1, Waiting) + "\r\n" + elEvent(2, Waiting) + "\r\r\n"
	br := bufio.NewReader(strings.NewReader(input))
	s := NewStream(electionTarget())
	for range 2 {
		line, err := ReadLine(br, MaxLineBytes)
		require.NoError(t, err)
		_, err = s.Next(line)
		require.NoError(t, err, "JSON allows CR as trailing whitespace")
	}
	_, err := ReadLine(br, MaxLineBytes)
	require.ErrorIs(t, err, io.EOF)
}
