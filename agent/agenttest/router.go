package agenttest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// Router serves several scripted conversations on one endpoint, as many
// agent runs sharing one model endpoint need (agentbox batch): each request
// goes to the conversation whose key occurs in the request's first user
// message (the task); the longest such key wins. Each conversation is a
// Server of its own with its own replies and recorded requests.
type Router struct {
	srv    *httptest.Server
	mu     sync.Mutex
	routes map[string]*Server
}

// NewRouter starts a router with one conversation per key; it is closed
// when the test ends.
func NewRouter(t testing.TB, routes map[string][]Reply) *Router {
	r := &Router{routes: map[string]*Server{}}
	for k, replies := range routes {
		r.routes[k] = &Server{replies: replies}
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.handle))
	t.Cleanup(r.srv.Close)
	return r
}

// URL is the base URL to configure the client with (…/v1).
func (r *Router) URL() string { return r.srv.URL + "/v1" }

// Route returns the conversation of key (nil if there is none).
func (r *Router) Route(key string) *Server {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.routes[key]
}

func (r *Router) handle(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, 64<<20))
	var cr openai.ChatCompletionRequest
	_ = json.Unmarshal(body, &cr)
	first := ""
	for _, m := range cr.Messages {
		if m.Role == openai.ChatMessageRoleUser {
			first = m.Content
			break
		}
	}
	r.mu.Lock()
	var s *Server
	best := -1
	for k, srv := range r.routes {
		if len(k) > best && strings.Contains(first, k) {
			s, best = srv, len(k)
		}
	}
	r.mu.Unlock()
	if s == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "agenttest: no route for the first user message")
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	s.handle(w, req)
}
