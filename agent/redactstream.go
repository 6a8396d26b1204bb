package agent

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Bounds of a redactStream.
const (
	// redactHold is the longest text held back waiting for the end of
	// its line; a longer line is redacted in pieces, cut at white space.
	redactHold = 64 << 10
	// redactQuiet is how long a partial line (a prompt, "working...")
	// waits for the rest of its line before it is shown.
	redactQuiet = 100 * time.Millisecond
)

// redactStream passes a command's output stream to w through redact, a
// line at a time (\n or \r ends a line), so that a secret is replaced
// whole however the stream was cut into chunks. A private key block is
// held until its END line (within redactHold), because the redaction of
// its BEGIN line alone would let its body through. Bytes that match
// nothing pass unchanged, invalid UTF-8 included.
//
// A partial line shown after a pause, and a line longer than redactHold
// passed on in pieces, are cut only where no secret can continue (see
// safeCut): the token at the end, and a password label before it, are
// held for the rest of the line. Limit (README): a single run of more
// than redactHold/2 token characters is cut where it must be.
type redactStream struct {
	mu     sync.Mutex
	w      io.Writer
	redact func(string) string
	buf    []byte
	timer  *time.Timer
	closed bool
	err    error
}

func newRedactStream(w io.Writer, redact func(string) string) *redactStream {
	return &redactStream{w: w, redact: redact}
}

func (r *redactStream) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0, io.ErrClosedPipe
	}
	r.buf = append(r.buf, p...)
	r.emitLines()
	for len(r.buf) > redactHold {
		cut := len(r.buf) - redactHold/2
		if i := safeCut(r.buf[:cut]); i > 0 {
			cut = i
		}
		r.emit(r.buf[:cut])
		r.buf = append(r.buf[:0], r.buf[cut:]...)
	}
	r.arm()
	if r.err != nil {
		return len(p), r.err
	}
	return len(p), nil
}

// emitLines writes every complete line, but holds back an unterminated
// private key block.
func (r *redactStream) emitLines() {
	end := bytes.LastIndexAny(r.buf, "\n\r") + 1
	if end == 0 {
		return
	}
	if k := openKeyBlock(r.buf[:end]); k >= 0 && len(r.buf) <= redactHold {
		end = k
	}
	if end == 0 {
		return
	}
	r.emit(r.buf[:end])
	r.buf = append(r.buf[:0], r.buf[end:]...)
}

// openKeyBlock is the offset of a private key's BEGIN line in b whose END
// line is not in b yet, or -1.
func openKeyBlock(b []byte) int {
	if !bytes.Contains(b, []byte("PRIVATE KEY")) {
		return -1 // the common case, found fast
	}
	i := bytes.LastIndex(b, []byte("-----BEGIN"))
	if i < 0 {
		return -1
	}
	head := b[i:min(len(b), i+80)]
	if !bytes.Contains(head, []byte("PRIVATE KEY")) || bytes.Contains(b[i:], []byte("-----END")) {
		return -1
	}
	return i
}

func (r *redactStream) emit(b []byte) {
	if len(b) == 0 || r.err != nil {
		return
	}
	_, r.err = io.WriteString(r.w, r.redact(string(b)))
}

// arm shows a partial line after redactQuiet without more output.
func (r *redactStream) arm() {
	if len(r.buf) == 0 || openKeyBlock(r.buf) >= 0 {
		return
	}
	if r.timer != nil {
		r.timer.Reset(redactQuiet)
		return
	}
	r.timer = time.AfterFunc(redactQuiet, r.quiet)
}

// quiet runs after redactQuiet without output: it shows the partial line.
func (r *redactStream) quiet() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || openKeyBlock(r.buf) >= 0 {
		return
	}
	// Show the partial line, but not a token it may be in the
	// middle of (nor the label before it): the rest of a secret
	// printed with a pause joins it.
	cut := safeCut(r.buf)
	if secretContext.Match(r.buf) {
		cut = 0 // a client or netrc line: its context decides
	}
	r.emit(r.buf[:cut])
	r.buf = append(r.buf[:0], r.buf[cut:]...)
}

// Close writes what is held back and stops the timer; later writes fail.
func (r *redactStream) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.err
	}
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.emit(r.buf)
	r.buf = nil
	return r.err
}

// tokenByte reports whether c can be part of a token or password.
func tokenByte(c byte) bool {
	return c > ' ' && c != '"' && c != '\'' && c != '`' && c < 0x7f
}

// labelTail matches a label a secret follows (password=, Bearer, -p,
// netrc's password) at the end of a text.
var labelTail = regexp.MustCompile(`(?i)(?:pass(?:word|wd|phrase)?|pwd|secret|token|key|bearer|basic|authorization|login|sshpass|\s-p)['"]?\]?\s*(?:=>|:=|=|:)?\s*['"]?$`)

// secretContext matches a partial line whose secret is recognised by
// context further back than its label (a database client's -p, a netrc
// entry): such a line is shown only whole.
var secretContext = regexp.MustCompile(`(?i)\b(?:mysql\w*|mariadb\S*|sshpass|machine|default\s+login)\b`)

// safeCut returns the largest n such that b[:n] can be redacted and shown
// without the rest of the stream: b is cut before its last token unless
// that token visibly ended (punctuation such as "..." a progress line
// ends with), and before a label that token or the next one follows.
// 0 means no such place.
func safeCut(b []byte) int {
	n := len(b)
	for n > 0 && tokenByte(b[n-1]) {
		n--
	}
	if n == len(b) || !endsToken(b) {
		// b ends in white space or a finished word: nothing pending
		// unless a label is.
		n = len(b)
	}
	from := max(0, n-96)
	if loc := labelTail.FindIndex(b[from:n]); loc != nil {
		n = from + loc[0]
		for n > 0 && tokenByte(b[n-1]) { // the whole label word
			n--
		}
	}
	return n
}

// endsToken reports whether b ends inside a token that may continue:
// its last byte is a letter, digit or one of the characters tokens use.
func endsToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	c := b[len(b)-1]
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("_-+/=~", c) >= 0
}

// discard drops what is held back and stops the timer; later writes fail.
func (r *redactStream) discard() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	if r.timer != nil {
		r.timer.Stop()
	}
	r.buf = nil
}
