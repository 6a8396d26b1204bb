package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"
)

// GenesisPrev is the prev of the first line of a log: 64 zeros.
const GenesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("audit: log is closed")

// Options configure a Writer.
type Options struct {
	// Key is the HMAC-SHA256 key; nil or empty writes no MACs.
	Key []byte
	// Redact holds the policy's audit.redact patterns: every match in every
	// string field (and in tool arguments, keys included) is replaced by
	// "[REDACTED]" before the line is hashed.
	Redact []*regexp.Regexp
	// Secrets are literal values (the model API key, ...) replaced by
	// "[REDACTED]" everywhere. Values shorter than MinSecretLen are ignored.
	Secrets []string
	// PreviewBytes bounds every string field (output_preview, answer, task,
	// error, ...; default DefaultPreviewBytes). Longer strings are cut with a
	// "…[truncated N bytes]" marker; longer tool-argument strings are
	// replaced by their first PreviewBytes plus " …[N bytes, sha256 X]".
	PreviewBytes int
}

// Writer appends records to an audit log file. It is safe for concurrent use
// by several goroutines, and several processes (each with its own Writer)
// may append to one file: every Append holds an exclusive file lock while it
// reads the last line, writes its own and fsyncs.
type Writer struct {
	path string
	key  []byte
	san  sanitizer

	mu sync.Mutex
	f  *os.File
}

// Open opens (creating if needed) the audit log at path for appending. A
// missing parent directory is created with mode 0700 and a new file gets mode
// 0600. Open refuses a symlink, anything but a regular file, and a file that
// group or others may write. Open does not check the chain: that is Verify's
// job.
func Open(path string, opts Options) (*Writer, error) {
	if path == "" {
		return nil, errors.New("audit: no log path given")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("audit: log path %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("audit: create log directory: %w", err)
	}
	fi, err := os.Lstat(abs)
	existed := err == nil
	switch {
	case err == nil:
		if err := checkMode(abs, fi); err != nil {
			return nil, err
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, fmt.Errorf("audit: log %s: %w", abs, err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_APPEND|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open log %s (a symlink is refused; pass the real path): %w", abs, err)
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: log %s: %w", abs, err)
	}
	if err := checkMode(abs, fi); err != nil {
		f.Close()
		return nil, err
	}
	if !existed || fi.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return nil, fmt.Errorf("audit: chmod log %s: %w", abs, err)
		}
	}
	var key []byte
	if len(opts.Key) > 0 {
		key = bytes.Clone(opts.Key)
	}
	return &Writer{
		path: abs,
		key:  key,
		san:  newSanitizer(opts),
		f:    f,
	}, nil
}

func checkMode(path string, fi fs.FileInfo) error {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("audit: log %s is a symlink; refusing to follow it: pass the real path", path)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("audit: log %s is not a regular file (%s)", path, fi.Mode().Type())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("audit: log %s is writable by group or others (mode %04o); run: chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	return nil
}

// Path returns the absolute path of the log.
func (w *Writer) Path() string { return w.path }

// Redact applies the writer's redaction (secrets and patterns, no
// truncation) to s.
func (w *Writer) Redact(s string) string { return w.san.redact(s) }

// Close closes the log. Append fails afterwards.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

// Append writes rec as one line and fsyncs it before returning. It fills V,
// Seq, Prev, MAC and (when zero) Time in rec; the line itself holds a
// redacted and bounded copy of rec's other fields (rec is not modified
// there). An error means the record may not be on disk: the caller must not
// carry out the action it announces.
//
// If the file does not end with a newline (a writer crashed mid-line), the
// new line starts with a newline, so the fragment stays a line of its own;
// the new record's prev is the sha256 of the fragment's bytes, as for any
// line, and its seq counts the fragment as one record. Verify reports the
// fragment as "truncated".
func (w *Writer) Append(rec *Record) error {
	if rec == nil {
		return errors.New("audit: nil record")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return ErrClosed
	}
	clean, err := w.san.record(rec)
	if err != nil {
		return err
	}
	if err := lockFile(w.f); err != nil {
		return fmt.Errorf("audit: lock %s: %w", w.path, err)
	}
	defer unlockFile(w.f)

	fi, err := w.f.Stat()
	if err != nil {
		return fmt.Errorf("audit: stat %s: %w", w.path, err)
	}
	if li, err := os.Lstat(w.path); err != nil || !os.SameFile(fi, li) {
		return fmt.Errorf("audit: log %s was replaced or moved while open; reopen it", w.path)
	}
	prev, seq, needNL, err := lastRecord(w.f, fi.Size())
	if err != nil {
		return fmt.Errorf("audit: read last record of %s: %w", w.path, err)
	}

	clean.V = FormatVersion
	clean.Seq = seq
	if clean.Time.IsZero() {
		clean.Time = time.Now()
	}
	clean.Time = clean.Time.UTC().Truncate(time.Microsecond)
	clean.Prev = hex.EncodeToString(prev[:])
	line, err := encodeLine(&clean, w.key)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, len(line)+2)
	if needNL {
		buf = append(buf, '\n')
	}
	buf = append(append(buf, line...), '\n')
	if _, err := w.f.Write(buf); err != nil {
		return fmt.Errorf("audit: write %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("audit: fsync %s: %w", w.path, err)
	}
	rec.V, rec.Seq, rec.Time, rec.Prev, rec.MAC = clean.V, clean.Seq, clean.Time, clean.Prev, clean.MAC
	return nil
}

// encodeLine returns the line for r (without newline), with its MAC when key
// is set. The MAC is hex(HMAC-SHA256(key, C)) where C is the line encoded
// without the mac member; the writer then inserts `,"mac":"<hex>"` before
// the final '}'. So C is the written line minus its last 74 bytes
// (`,"mac":"` + 64 hex digits + `"}`) plus "}". It sets r.MAC.
func encodeLine(r *Record, key []byte) ([]byte, error) {
	r.MAC = ""
	b, err := appendRecord(make([]byte, 0, 1024), r, false)
	if err != nil {
		return nil, fmt.Errorf("audit: encode record: %w", err)
	}
	if len(key) > 0 {
		m := hmac.New(sha256.New, key)
		m.Write(b)
		r.MAC = hex.EncodeToString(m.Sum(nil))
		b = append(b[:len(b)-1], `,"mac":"`...)
		b = append(append(b, r.MAC...), '"', '}')
	}
	if len(b) > maxLineBytes {
		return nil, fmt.Errorf("audit: record too large (%d bytes)", len(b))
	}
	return b, nil
}

// macSuffixLen is len(`,"mac":"`) + 64 + len(`"}`).
const macSuffixLen = 8 + 64 + 2

// lastRecord returns the sha256 of the last line of f (the bytes after the
// last newline, or before the final newline), the seq the next record gets,
// and whether the file lacks a final newline. Lines that are not records
// count as one seq each, as Verify counts them.
func lastRecord(f *os.File, size int64) (sum [32]byte, seq int64, needNL bool, err error) {
	if size == 0 {
		return sum, 1, false, nil
	}
	var last [1]byte
	if _, err = f.ReadAt(last[:], size-1); err != nil {
		return sum, 0, false, err
	}
	needNL = last[0] != '\n'
	end := size
	if !needNL {
		end--
	}
	start, err := lineStart(f, end)
	if err != nil {
		return sum, 0, false, err
	}
	h := sha256.New()
	if _, err = io.Copy(h, io.NewSectionReader(f, start, end-start)); err != nil {
		return sum, 0, false, err
	}
	h.Sum(sum[:0])
	var unparsed int64
	for lines := 0; lines < 10000; lines++ {
		if end-start <= maxLineBytes {
			b := make([]byte, end-start)
			if _, err = f.ReadAt(b, start); err != nil {
				return sum, 0, false, err
			}
			var hd head
			if parseHead(b, &hd) && hd.hasSeq {
				return sum, hd.seq + unparsed + 1, needNL, nil
			}
		}
		unparsed++
		if start == 0 {
			break
		}
		end = start - 1
		if start, err = lineStart(f, end); err != nil {
			return sum, 0, false, err
		}
	}
	return sum, unparsed + 1, needNL, nil
}

// lineStart returns the offset just after the last newline before end, or 0.
func lineStart(f *os.File, end int64) (int64, error) {
	var chunk [8192]byte
	for pos := end; pos > 0; {
		n := min(int64(len(chunk)), pos)
		pos -= n
		if _, err := f.ReadAt(chunk[:n], pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(chunk[:n], '\n'); i >= 0 {
			return pos + int64(i) + 1, nil
		}
	}
	return 0, nil
}
