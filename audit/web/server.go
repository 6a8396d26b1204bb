// Package web serves a read-only web viewer for agentbox audit logs: the
// sessions of each log, a session's timeline with filters, each log's
// verification verdict, and a live feed of records as a log grows (server-
// sent events). Its assets are embedded; it loads nothing from elsewhere.
package web

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/audit"
)

//go:embed assets
var assets embed.FS

// Options configure a Server.
type Options struct {
	// Token, when set, must be given as ?token= on every request: the
	// server then accepts any Host header (it is meant for another
	// address than loopback).
	Token string
	// Key verifies the logs' MACs (nil: chain only).
	Key []byte
	// Poll is how often a live feed looks for new records
	// (audit.DefaultPoll when zero).
	Poll time.Duration
	// Diff writes the unified diff of a session's changes while its
	// workspace copy still exists (copy mode, batch); nil, or ErrNoCopy,
	// shows none.
	Diff func(session string, w io.Writer) error
	// Checkpoint is a signed checkpoint (C2SP note from agentbox audit
	// checkpoint --sign-key) every log is checked against, with
	// VerifyKey its verifier key; the verdicts show the result.
	Checkpoint []byte
	VerifyKey  string
}

// ErrNoCopy is what Options.Diff returns for a session whose copy is gone
// (applied, discarded, collected) or never existed (rw mode).
var ErrNoCopy = errors.New("web: no workspace copy of this session")

// Server is the viewer's http.Handler.
type Server struct {
	files []string
	opts  Options
	mux   *http.ServeMux
}

var _ http.Handler = (*Server)(nil)

// New returns a viewer of the given log files.
func New(files []string, opts Options) (*Server, error) {
	if len(files) == 0 {
		return nil, errors.New("web: no audit log given")
	}
	if opts.Poll <= 0 {
		opts.Poll = audit.DefaultPoll
	}
	s := &Server{files: files, opts: opts, mux: http.NewServeMux()}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, "index.html")
	})
	s.mux.HandleFunc("GET /api/files", s.handleFiles)
	s.mux.HandleFunc("GET /api/sessions", s.handleSessions)
	s.mux.HandleFunc("GET /api/records", s.handleRecords)
	s.mux.HandleFunc("GET /api/events", s.handleEvents)
	s.mux.HandleFunc("GET /api/diff", s.handleDiff)
	return s, nil
}

// NewToken returns a random token for Options.Token.
func NewToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// IsLoopback reports whether addr (host:port) binds to loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "read-only viewer", http.StatusMethodNotAllowed)
		return
	}
	if s.opts.Token != "" {
		if subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(s.opts.Token)) != 1 {
			http.Error(w, "a token is required: use the URL agentbox printed", http.StatusUnauthorized)
			return
		}
	} else if !loopbackHost(r.Host) {
		// A page elsewhere cannot reach the viewer by rebinding its own
		// name to 127.0.0.1.
		http.Error(w, "the viewer answers only to a loopback host name", http.StatusForbidden)
		return
	}
	s.mux.ServeHTTP(w, r)
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// file returns the log named by ?file= (an index into the files given).
func (s *Server) file(r *http.Request) (string, error) {
	i, err := strconv.Atoi(r.URL.Query().Get("file"))
	if err != nil || i < 0 || i >= len(s.files) {
		return "", fmt.Errorf("no such file: want ?file=0..%d", len(s.files)-1)
	}
	return s.files[i], nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

func (s *Server) handleFiles(w http.ResponseWriter, r *http.Request) {
	out := make([]FileVerdict, len(s.files))
	for i, f := range s.files {
		out[i] = verifyFile(f, s.opts.Key)
		out[i].Index = i
		if len(s.opts.Checkpoint) > 0 && out[i].Error == "" {
			out[i].checkCheckpoint(s.opts.Checkpoint, s.opts.VerifyKey)
		}
	}
	writeJSON(w, out)
}

func (s *Server) handleSessions(w http.ResponseWriter, r *http.Request) {
	path, err := s.file(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sessions, err := summarize(path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, sessions)
}

func (s *Server) handleRecords(w http.ResponseWriter, r *http.Request) {
	path, err := s.file(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	recs, err := records(path, r.URL.Query().Get("session"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, recs)
}

// handleDiff answers the unified diff of a session's changes as text, or
// 404 when its copy is gone or there is none.
func (s *Server) handleDiff(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("session")
	if s.opts.Diff == nil || id == "" {
		http.Error(w, "no diff", http.StatusNotFound)
		return
	}
	var b strings.Builder
	if err := s.opts.Diff(id, &b); err != nil {
		if errors.Is(err, ErrNoCopy) {
			http.Error(w, "no workspace copy of this session", http.StatusNotFound)
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, b.String())
}

// handleEvents streams every record appended to the log after the
// request as a server-sent event "record" (JSON of Line), until the
// client goes away.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	path, err := s.file(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	t := audit.NewTailer(path)
	if _, err := t.Next(); err != nil { // skip what is there
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, ": following\n\n")
	flusher.Flush()
	follow(r.Context(), s.opts.Poll, func() bool {
		lines, err := t.Next()
		if err != nil {
			fmt.Fprintf(w, "event: failure\ndata: %s\n\n", jsonString(err.Error()))
			flusher.Flush()
			return false
		}
		for _, l := range lines {
			if l.Rec == nil {
				continue
			}
			b, _ := json.Marshal(lineOf(l.N, l.Rec))
			fmt.Fprintf(w, "event: record\ndata: %s\n\n", b)
		}
		if len(lines) > 0 {
			flusher.Flush()
		}
		return true
	})
}

// follow calls step every poll until it returns false or ctx ends.
func follow(ctx context.Context, poll time.Duration, step func() bool) {
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for step() {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
