package events

import (
	"bufio"
	"errors"
	"io"
)

// MaxLineBytes bounds one hold line; real lines are a few hundred bytes, so
// the limit only stops a hostile or runaway hold from growing memory.
const MaxLineBytes = 64 << 10

// ReadLine reads one '\n'-terminated line of at most limit bytes (limit < 1 means
// MaxLineBytes), without the newline. "\r" is kept: JSON allows it as trailing
// whitespace, and stripping it would accept lines the contract never defined.
// An over-long line fails as soon as limit bytes have been read without a
// newline, so neither memory nor reading is unbounded: a hold that writes one
// line forever is refused at once instead of being read forever. The reader
// is then in the middle of that line and must not be read again. A final line
// without a newline is refused: a hold that died mid-write must not have half
// an event trusted.
func ReadLine(br *bufio.Reader, limit int) ([]byte, error) {
	if limit < 1 {
		limit = MaxLineBytes
	}
	line := []byte{}
	started := false
	for {
		chunk, err := br.ReadSlice('\n')
		started = started || len(chunk) > 0
		content := chunk
		if err == nil {
			content = chunk[:len(chunk)-1]
		}
		if len(line)+len(content) > limit {
			return nil, invalid(msgLineTooLong)
		}
		line = append(line, content...)
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && !started:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, invalid(msgPartialLine)
		default:
			return nil, &failure{class: ErrInvalid, msg: msgReadFailed + ": " + err.Error(), cause: err}
		}
	}
}
