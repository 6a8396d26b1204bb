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

	"github.com/agentbox/agentbox/audit/proof"
)

// GenesisPrev is the prev of the first line of a log: 64 zeros.
const GenesisPrev = "0000000000000000000000000000000000000000000000000000000000000000"

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("audit: log is closed")

// Key mix-ups between a log and a writer. A keyed log never receives
// unkeyed records (they would fail verification for good), and an unkeyed
// log does not silently become keyed (its earlier records would still
// prove nothing about a rewrite).
var (
	ErrKeyRequired = errors.New("the log is keyed (its records carry a MAC) and no key was given: set " + KeyEnv + " (or --audit-key-file) to the log's key")
	ErrKeyMismatch = errors.New("the log's last record does not verify with the given key: set " + KeyEnv + " to the key this log was written with")
	ErrUnkeyedLog  = errors.New("the log is not keyed and a key was given: an unkeyed log does not become keyed; start a new log for keyed records (--audit NEW_FILE) or unset " + KeyEnv)
)

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
	// Checkpoints, when set, is a directory where Close writes a signed
	// checkpoint of the whole log (see writeCheckpoint), signed with
	// CheckpointKey (a note signer key from agentbox audit keygen).
	Checkpoints, CheckpointKey string
	// Sink, when set, receives every record once written (the redacted
	// copy and its line, see Sink); the writer's Close closes it when it
	// is an io.Closer.
	Sink Sink
}

// Sink receives each record after it is written: rec is the copy as on
// disk (redacted, with seq, time and prev), line its bytes without the
// newline. It must not block (it runs under the writer's lock) nor keep
// rec's slices.
type Sink interface {
	Record(rec *Record, line []byte)
}

// DropCounter is a Sink that may lose records (a bounded queue): the count
// for a session goes into its session_end record as otlp_dropped.
type DropCounter interface {
	Dropped(session string) int
}

// Writer appends records to an audit log file. It is safe for concurrent use
// by several goroutines, and several processes (each with its own Writer)
// may append to one file: every Append holds an exclusive file lock while it
// reads the last line, writes its own and fsyncs.
type Writer struct {
	path string
	key  []byte
	san  sanitizer
	sink Sink

	cpDir, cpKey string

	mu    sync.Mutex
	f     *os.File
	dirty bool // a record was written and not yet fsynced
}

// Open opens (creating if needed) the audit log at path for appending. A
// missing parent directory is created with mode 0700 and a new file gets mode
// 0600. Open refuses a symlink, anything but a regular file, and a file that
// group or others may write. Open does not check the chain: that is Verify's
// job.
func Open(path string, opts Options) (*Writer, error) {
	if opts.Checkpoints != "" {
		if err := proof.ValidSigner(opts.CheckpointKey); err != nil {
			return nil, fmt.Errorf("audit: checkpoints to %s: %w", opts.Checkpoints, err)
		}
	}
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
	if err := checkKeyState(f, fi.Size(), key, true); err != nil {
		f.Close()
		return nil, fmt.Errorf("audit: log %s: %w", abs, err)
	}
	return &Writer{
		path: abs,
		key:  key,
		san:  newSanitizer(opts),
		sink: opts.Sink, cpDir: opts.Checkpoints, cpKey: opts.CheckpointKey,
		f: f,
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
	case linkCount(fi) > 1:
		return fmt.Errorf("audit: log %s has %d hard links; another name could rewrite or remove it: remove the other links or pass a new log path", path, linkCount(fi))
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
	var err error
	if w.dirty {
		if err = w.f.Sync(); err != nil {
			err = fmt.Errorf("audit: fsync %s: %w", w.path, err)
		}
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	w.f = nil
	if c, ok := w.sink.(io.Closer); ok {
		_ = c.Close() // a collector that is down never fails the session
	}
	if w.cpDir != "" && err == nil {
		if cerr := writeCheckpoint(w.path, w.cpDir, w.cpKey); cerr != nil {
			err = fmt.Errorf("audit: checkpoint to %s: %w", w.cpDir, cerr)
		}
	}
	return err
}

// announces reports whether rec announces an action that is carried out
// only after Append returns: such a record is fsynced before Append
// returns. A record of what already happened (a call's result, a model
// call, an egress attempt, an alarm, an error, the session's end) is
// written at once and reaches the disk with the next announcing record's
// fsync, or at Close: one fsync per tool call instead of three. A crash of
// the machine (not of the process: the bytes are in the kernel already)
// can lose such a trailing record; verify then reports the session as
// unended.
func announces(rec *Record) bool {
	switch rec.Event {
	case EventToolCall:
		return rec.Phase != PhaseResult
	case EventModelCall, EventNet, EventAlarm, EventError:
		return false
	}
	return true
}

// Append writes rec as one line and, when it announces an action (see
// announces), fsyncs it before returning. It fills V,
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
	if err := checkMode(w.path, fi); err != nil {
		return err
	}
	last, err := lastRecord(w.f, fi.Size())
	if err != nil {
		return fmt.Errorf("audit: read last record of %s: %w", w.path, err)
	}
	if err := last.keyState(w.key); err != nil {
		return fmt.Errorf("audit: log %s: %w", w.path, err)
	}
	prev, seq, needNL := last.sum, last.seq, last.needNL

	clean.V = FormatVersion
	clean.Seq = seq
	if clean.Time.IsZero() {
		clean.Time = time.Now()
	}
	clean.Time = clean.Time.UTC().Truncate(time.Microsecond)
	clean.Prev = hex.EncodeToString(prev[:])
	if dc, ok := w.sink.(DropCounter); ok && clean.Event == EventSessionEnd {
		clean.OTLPDropped = dc.Dropped(clean.Session)
	}
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
	w.dirty = true
	if announces(rec) {
		if err := w.f.Sync(); err != nil {
			return fmt.Errorf("audit: fsync %s: %w", w.path, err)
		}
		w.dirty = false
	}
	rec.V, rec.Seq, rec.Time, rec.Prev, rec.MAC = clean.V, clean.Seq, clean.Time, clean.Prev, clean.MAC
	if w.sink != nil {
		w.sink.Record(&clean, line)
	}
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

// tail is what the writer needs from the end of a log.
type tail struct {
	sum    [32]byte // sha256 of the last line
	seq    int64    // the seq the next record gets
	needNL bool     // the file lacks a final newline
	found  bool     // a record was found (the last parseable line)
	keyed  bool     // that record carries a mac
	line   []byte   // that record's bytes
}

// keyState refuses to append with key to a log whose last record says
// otherwise (see ErrKeyRequired, ErrUnkeyedLog).
func (t tail) keyState(key []byte) error {
	switch {
	case !t.found:
		return nil
	case t.keyed && len(key) == 0:
		return ErrKeyRequired
	case !t.keyed && len(key) > 0:
		return ErrUnkeyedLog
	}
	return nil
}

// checkKeyState reads the end of f under its lock and checks the key
// against the last record; with checkMAC, that record's MAC too (a wrong
// key).
func checkKeyState(f *os.File, size int64, key []byte, checkMAC bool) error {
	if size == 0 {
		return nil
	}
	if err := lockFile(f); err != nil {
		return err
	}
	defer unlockFile(f)
	t, err := lastRecord(f, size)
	if err != nil {
		return err
	}
	if err := t.keyState(key); err != nil {
		return err
	}
	if checkMAC && t.found && t.keyed {
		var h head
		parseHead(t.line, &h)
		v := verifier{mac: hmac.New(sha256.New, key)}
		if !v.macOK(t.line, h.mac) {
			return ErrKeyMismatch
		}
	}
	return nil
}

// lastRecord returns the sha256 of the last line of f (the bytes after the
// last newline, or before the final newline), the seq the next record gets,
// whether the file lacks a final newline, and the last parseable record.
// Lines that are not records count as one seq each, as Verify counts them.
func lastRecord(f *os.File, size int64) (t tail, err error) {
	t.seq = 1
	if size == 0 {
		return t, nil
	}
	var last [1]byte
	if _, err = f.ReadAt(last[:], size-1); err != nil {
		return t, err
	}
	t.needNL = last[0] != '\n'
	end := size
	if !t.needNL {
		end--
	}
	start, err := lineStart(f, end)
	if err != nil {
		return t, err
	}
	h := sha256.New()
	if _, err = io.Copy(h, io.NewSectionReader(f, start, end-start)); err != nil {
		return t, err
	}
	h.Sum(t.sum[:0])
	var unparsed int64
	for lines := 0; lines < 10000; lines++ {
		if end-start <= maxLineBytes {
			b := make([]byte, end-start)
			if _, err = f.ReadAt(b, start); err != nil {
				return t, err
			}
			var hd head
			if parseHead(b, &hd) && hd.hasSeq {
				t.seq, t.found, t.keyed, t.line = hd.seq+unparsed+1, true, hd.hasMAC, b
				return t, nil
			}
		}
		unparsed++
		if start == 0 {
			break
		}
		end = start - 1
		if start, err = lineStart(f, end); err != nil {
			return t, err
		}
	}
	t.seq = unparsed + 1
	return t, nil
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
