package agent

import (
	"bytes"
	"io"
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
// Limits (documented in README): a secret split across a piece of a line
// longer than redactHold, or printed with a pause longer than redactQuiet
// in its middle, may be shown in two halves that are each unredacted.
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
		if i := bytes.LastIndexAny(r.buf[:cut], " \t"); i > 0 {
			cut = i + 1
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
	r.timer = time.AfterFunc(redactQuiet, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.closed || openKeyBlock(r.buf) >= 0 {
			return
		}
		r.emit(r.buf)
		r.buf = r.buf[:0]
	})
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
