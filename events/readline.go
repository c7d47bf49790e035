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
// An over-long line is discarded up to its newline before the error returns,
// so memory stays bounded. A final line without a newline is refused: a hold
// that died mid-write must not have half an event trusted.
func ReadLine(br *bufio.Reader, limit int) ([]byte, error) {
	if limit < 1 {
		limit = MaxLineBytes
	}
	line := []byte{}
	tooLong := false
	started := false
	for {
		chunk, err := br.ReadSlice('\n')
		started = started || len(chunk) > 0
		content := chunk
		if err == nil {
			content = chunk[:len(chunk)-1]
		}
		if !tooLong && len(line)+len(content) > limit {
			tooLong, line = true, nil
		}
		if !tooLong {
			line = append(line, content...)
		}
		switch {
		case err == nil && tooLong:
			return nil, invalid(msgLineTooLong)
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case tooLong:
			return nil, invalid(msgLineTooLong)
		case errors.Is(err, io.EOF) && !started:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			return nil, invalid(msgPartialLine)
		default:
			return nil, &failure{class: ErrInvalid, msg: msgReadFailed + ": " + err.Error(), cause: err}
		}
	}
}
