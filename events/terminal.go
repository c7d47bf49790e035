package events

import (
	"strconv"
	"strings"
	"unicode"
)

// maxEchoBytes bounds how much of a hold-supplied event name reaches stderr.
const maxEchoBytes = 64

// terminalSafe makes a hold-supplied string fit for one stderr line: a hostile
// or corrupted hold must not be able to move the cursor, forge further lines
// or flood the log. Non-printable runes (controls, bidi overrides, line
// separators) are shown the way Rust's escape_default would, as the hold's own
// human output does. A cut is marked with "..." so a prefix is not mistaken for
// the whole name, and never splits a rune or an escape.
func terminalSafe(s string) string {
	const mark = "..."
	var pieces []string
	total := 0
	for _, r := range s {
		p := string(r)
		if !unicode.IsPrint(r) {
			p = escapeRune(r)
		}
		pieces = append(pieces, p)
		total += len(p)
		if total > maxEchoBytes {
			break
		}
	}
	if total <= maxEchoBytes {
		return strings.Join(pieces, "")
	}
	var b strings.Builder
	for _, p := range pieces {
		if b.Len()+len(p)+len(mark) > maxEchoBytes {
			break
		}
		b.WriteString(p)
	}
	return b.String() + mark
}

func escapeRune(r rune) string {
	switch r {
	case '\t':
		return `\t`
	case '\r':
		return `\r`
	case '\n':
		return `\n`
	}
	return `\u{` + strconv.FormatInt(int64(r), 16) + `}`
}
