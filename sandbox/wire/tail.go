package wire

import (
	"bytes"
	"sync"
)

// TailBuffer keeps the last Max bytes written: a backend collects the
// executor's stderr in one and hands String to Transport.Diag.
type TailBuffer struct {
	Max int

	mu sync.Mutex
	b  []byte
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.Max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.Max:]...)
	}
	return len(p), nil
}

// String is what was kept, without surrounding white space.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.b))
}
