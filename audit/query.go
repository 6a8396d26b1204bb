package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// Filter selects records for Show. Empty fields match everything.
type Filter struct {
	Session  string    // session id or a prefix of it
	Tool     string    // tool name, exact
	Decision string    // allow | deny | ask ...; result records match through their call's decision
	Grep     string    // substring of the raw JSON line
	Since    time.Time // records at or after
	Until    time.Time // records before
}

// Scan calls fn for every record of the log in order, with its 1-based line
// number. Lines that are not valid records (a truncated last line, damage)
// are skipped; Verify reports them. Scan stops at fn's first error and
// returns it.
func Scan(r io.Reader, fn func(line int, rec Record) error) error {
	return scanRaw(r, func(l rawLine, rec *Record) error { return fn(l.n, *rec) }, nil)
}

// ScanLines calls fn for every record of the log in order with its 1-based
// line number and the line's bytes (without the newline; nil for a line
// too long to hold), and bad, if set, for every line that is not a record.
// Exporters use the bytes to name a record by its hash (sha256 of the
// line, what the next line's prev holds).
func ScanLines(r io.Reader, fn func(line int, raw []byte, rec *Record) error, bad func(line int, raw []byte) error) error {
	var onBad func(l rawLine, err error) error
	if bad != nil {
		onBad = func(l rawLine, _ error) error { return bad(l.n, l.b) }
	}
	return scanRaw(r, func(l rawLine, rec *Record) error { return fn(l.n, l.b, rec) }, onBad)
}

// ReadAll returns every record of the log (see Scan).
func ReadAll(r io.Reader) ([]Record, error) {
	var out []Record
	err := Scan(r, func(_ int, rec Record) error {
		out = append(out, rec)
		return nil
	})
	return out, err
}

// scanRaw decodes each line; bad lines go to onBad (if set) instead of fn.
func scanRaw(r io.Reader, fn func(l rawLine, rec *Record) error, onBad func(l rawLine, err error) error) error {
	lr := newLineReader(r)
	for {
		l, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("audit: read log: %w", err)
		}
		var rec Record
		var derr error
		switch {
		case l.long:
			derr = fmt.Errorf("line longer than %d bytes", maxLineBytes)
		case len(bytes.TrimSpace(l.b)) == 0:
			derr = errors.New("empty line")
		default:
			derr = json.Unmarshal(l.b, &rec)
		}
		if derr != nil {
			if onBad != nil {
				if err := onBad(l, derr); err != nil {
					return err
				}
			}
			continue
		}
		if err := fn(l, &rec); err != nil {
			return err
		}
	}
}

// matcher applies a Filter; it remembers the decision of each call so that
// a result record matches a Decision filter through its decision record.
type matcher struct {
	f     Filter
	calls map[string]string // session + "\x00" + call_id -> decision
}

func newMatcher(f Filter) *matcher { return &matcher{f: f, calls: map[string]string{}} }

func (m *matcher) match(raw []byte, rec *Record) bool {
	decision := rec.Decision
	if rec.Event == EventToolCall && rec.CallID != "" {
		k := rec.Session + "\x00" + rec.CallID
		if rec.Phase == PhaseResult {
			if decision == "" {
				decision = m.calls[k]
			}
			delete(m.calls, k)
		} else if m.f.Decision != "" {
			m.calls[k] = decision
		}
	}
	f := m.f
	switch {
	case f.Session != "" && !strings.HasPrefix(rec.Session, f.Session):
		return false
	case f.Tool != "" && rec.Tool != f.Tool:
		return false
	case f.Decision != "" && !strings.EqualFold(decision, f.Decision):
		return false
	case !f.Since.IsZero() && rec.Time.Before(f.Since):
		return false
	case !f.Until.IsZero() && !rec.Time.Before(f.Until):
		return false
	case f.Grep != "" && !bytes.Contains(raw, []byte(f.Grep)):
		return false
	}
	return true
}
