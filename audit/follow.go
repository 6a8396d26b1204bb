package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// DefaultPoll is how often Follow looks for new records.
const DefaultPoll = 250 * time.Millisecond

// ErrLogShrank is returned when a followed log gets shorter: it was cut or
// replaced, and following it further would skip or repeat records.
var ErrLogShrank = errors.New("audit: the log got shorter while followed (cut or replaced); run: agentbox audit verify")

// Tailer reads the complete lines appended to a log since its last call.
// It is not safe for concurrent use.
type Tailer struct {
	path string
	off  int64
	line int
	part []byte
}

// NewTailer returns a Tailer that starts at the beginning of the log.
func NewTailer(path string) *Tailer { return &Tailer{path: path} }

// TailLine is one complete line read by a Tailer.
type TailLine struct {
	N   int    // 1-based line number
	Raw []byte // without the newline
	Rec *Record
	Err error // the line is not a record
}

// Next returns the complete lines added since the last call (none when the
// log has not grown; a missing log is no lines). An incomplete last line
// waits for its newline.
func (t *Tailer) Next() ([]TailLine, error) {
	f, err := os.Open(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: follow %s: %w", t.path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit: follow %s: %w", t.path, err)
	}
	if fi.Size() < t.off {
		return nil, ErrLogShrank
	}
	if fi.Size() == t.off {
		return nil, nil
	}
	data, err := io.ReadAll(io.NewSectionReader(f, t.off, fi.Size()-t.off))
	if err != nil {
		return nil, fmt.Errorf("audit: follow %s: %w", t.path, err)
	}
	t.off += int64(len(data))
	data = append(t.part, data...)
	var out []TailLine
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		t.line++
		l := TailLine{N: t.line, Raw: data[:i:i]}
		var rec Record
		if err := json.Unmarshal(l.Raw, &rec); err != nil {
			l.Err = err
		} else {
			l.Rec = &rec
		}
		out = append(out, l)
		data = data[i+1:]
	}
	t.part = append([]byte(nil), data...)
	return out, nil
}

// Follow writes the matching records of the log at path as Show does, then
// keeps writing those appended to it, looking every poll (DefaultPoll when
// zero), until ctx ends (then it returns nil).
func Follow(ctx context.Context, w io.Writer, path string, f Filter, opts ShowOptions, poll time.Duration) error {
	if poll <= 0 {
		poll = DefaultPoll
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("audit: follow: %w", err)
	}
	t := NewTailer(path)
	m := newMatcher(f)
	bw := bufio.NewWriter(w)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		lines, err := t.Next()
		if err != nil {
			bw.Flush()
			return err
		}
		for _, l := range lines {
			switch {
			case l.Rec == nil:
				if !opts.JSON {
					fmt.Fprintf(bw, "line %d: unreadable record (%s); run: agentbox audit verify\n", l.N, clean(l.Err.Error(), 200))
				}
			case !m.match(l.Raw, l.Rec):
			case opts.JSON:
				bw.Write(l.Raw)
				bw.WriteByte('\n')
			default:
				bw.WriteString(FormatRecord(l.Rec, opts.Color))
				bw.WriteByte('\n')
			}
		}
		if err := bw.Flush(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
