package netproxy

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/policy"
	"github.com/agentbox/agentbox/sandbox"
)

// exchange serves one request read from the client inside an intercepted
// connection (or one plain HTTP request when the broker is on): the rules
// decide it, placeholders are checked and replaced, the request goes to the
// upstream (uw/ubr) and the scrubbed response back to cw. It fills ev and
// reports whether both connections may carry another request.
func (p *Proxy) exchange(cw io.Writer, req *http.Request, uw io.Writer, ubr *bufio.Reader, t policy.NetTarget, overTLS bool, o *sandbox.Origin, ev *Event) bool {
	b := p.cfg.Broker
	defer req.Body.Close()
	ev.Method, ev.Path = req.Method, req.URL.EscapedPath()
	if req.URL.RawQuery != "" {
		ev.Path += "?" + req.URL.RawQuery
	}
	ev.Decision = Deny
	call := b.call()
	ev.CallID = call.ID

	upath := rawPath(req)
	used, stray := b.placeholdersIn(req)
	inBody, err := b.placeholdersInBody(req)
	if err != nil {
		ev.Err = "read request body: " + err.Error()
		return false
	}
	carried := union(union(used, stray), inBody) // for misuse; only named headers are substituted
	if b.Rules.HasRules(t) || len(carried) > 0 {
		// The upstream is sent exactly the path the rules match.
		norm, err := policy.NormalizePath(upath)
		if err != nil {
			return p.answer(cw, ev, 403, RuleRequest, "", fmt.Sprintf("%s %s%s refused: %v; send the path normalised", req.Method, t, clip(upath), err), carried, "")
		}
		dec, _ := url.PathUnescape(norm)
		req.URL.Path, req.URL.RawPath, upath = dec, norm, norm
	}
	d := b.Rules.DecideRequest(t, req.Method, upath)
	if d.Rule != "" {
		ev.Rule, ev.RuleText = d.Rule, d.Text
	}
	if d.Verdict != policy.Allow {
		return p.answer(cw, ev, 403, d.Rule, d.Text, d.Reason, carried, "the rules deny this request")
	}
	for _, s := range inBody {
		if !s.Spec.MatchesHost(t) {
			why := fmt.Sprintf("%s is not one of secrets.%s.hosts", t, s.Spec.Name)
			return p.answer(cw, ev, 403, d.Rule, d.Text, fmt.Sprintf("%s %s%s refused: the request body carries the placeholder of %s: %s", req.Method, t, upath, s.Spec.Name, why), carried, why)
		}
	}
	for _, s := range stray {
		why := fmt.Sprintf("the placeholder of %s is put only into secrets.%s.headers (%s), never into the request line or another header", s.Spec.Name, s.Spec.Name, strings.Join(s.Spec.Headers, ", "))
		return p.answer(cw, ev, 403, d.Rule, d.Text, fmt.Sprintf("%s %s%s refused: %s", req.Method, t, upath, why), carried, "")
	}
	for _, s := range used {
		why := ""
		switch {
		case !s.Spec.MatchesHost(t):
			why = fmt.Sprintf("%s is not one of secrets.%s.hosts", t, s.Spec.Name)
		case !overTLS && !s.Spec.AllowPlaintext:
			why = fmt.Sprintf("the request is plain HTTP and secrets.%s goes out only inside TLS (use https://, or set allow_plaintext: true)", s.Spec.Name)
		default:
			why = programOf(s, o, ev)
		}
		if why != "" {
			return p.answer(cw, ev, 403, d.Rule, d.Text, fmt.Sprintf("%s %s%s refused: the placeholder of %s was sent where it may not go: %s", req.Method, t, upath, s.Spec.Name, why), carried, why)
		}
	}
	ev.Decision = Allow
	if d.Rule == "" {
		ev.Reason = d.Reason
	}
	var sum hash.Hash
	if len(used) > 0 {
		names := make([]string, len(used))
		for i, s := range used {
			names[i] = s.Spec.Name
			substitute(req.Header, s.Spec.Headers, s.Placeholder, s.Value)
		}
		ev.Secret = strings.Join(names, ",")
		sum = sha256.New()
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(req.Body, sum), req.Body}
	}
	sc := b.scrubber()
	if sc != nil {
		req.Header.Set("Accept-Encoding", "identity") // the body must be readable to be scrubbed
	}

	req.Host = t.String()
	if (overTLS && t.Port == 443) || (!overTLS && t.Port == 80) {
		req.Host = strings.TrimSuffix(strings.TrimSuffix(req.Host, ":443"), ":80")
	}
	req.URL.Host, req.URL.Scheme = req.Host, ""
	req.URL.User = nil
	continueSent := strings.EqualFold(req.Header.Get("Expect"), "100-continue")
	req.Header.Del("Expect")
	dropHopHeaders(req.Header)
	if req.Header.Get("User-Agent") == "" {
		req.Header["User-Agent"] = []string{""}
	}
	req.RequestURI = ""
	keep := !req.Close
	if continueSent {
		if _, err := io.WriteString(cw, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			ev.Err = "client: " + err.Error()
			return false
		}
	}
	upW := &countWriter{w: uw}
	err = req.Write(upW)
	ev.BytesUp = upW.n
	if sum != nil {
		ev.BodySHA256 = hex.EncodeToString(sum.Sum(nil))
	}
	if err != nil {
		ev.Err = "send request: " + err.Error()
		return false
	}
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(ubr, req)
		if err != nil {
			ev.Err = "read response: " + err.Error()
			p.answer(cw, ev, 502, ev.Rule, ev.RuleText, fmt.Sprintf("%s %s%s: no response from upstream: %v", req.Method, t, upath, err), nil, "")
			ev.Decision = Allow
			return false
		}
		if resp.StatusCode >= 200 {
			break
		}
		resp.Body.Close()
	}
	defer resp.Body.Close()
	ev.Status = resp.StatusCode
	dropHopHeaders(resp.Header)
	if resp.Close || resp.StatusCode == http.StatusSwitchingProtocols {
		keep = false
	}
	resp.Close = !keep
	if sc != nil {
		if err := scrubResponse(resp, sc); err != nil {
			ev.Err = err.Error()
			p.answer(cw, ev, 502, ev.Rule, ev.RuleText, fmt.Sprintf("%s %s%s: %v", req.Method, t, upath, err), nil, "")
			ev.Decision = Allow
			return false
		}
	}
	downW := &countWriter{w: cw}
	err = resp.Write(downW)
	ev.BytesDown += downW.n
	if err != nil {
		ev.Err = "send response: " + err.Error()
		return false
	}
	return keep
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// answer refuses or fails a request itself: status, the reason in
// ReasonHeader and the body. A refused request that carried a placeholder
// is a secret_misuse alarm. The connection is not reused.
func (p *Proxy) answer(cw io.Writer, ev *Event, status int, rule, text, reason string, used []Secret, misuse string) bool {
	ev.Status, ev.Reason = status, reason
	if rule != "" {
		ev.Rule, ev.RuleText = rule, text
	}
	if len(used) > 0 && status == 403 {
		names := make([]string, len(used))
		for i, s := range used {
			names[i] = s.Spec.Name
		}
		ev.Secret = strings.Join(names, ",")
		ev.Alarm = KindSecretMisuse
		if misuse != "" && !strings.Contains(reason, misuse) {
			ev.Reason = reason + " (" + misuse + ")"
		}
	}
	writeRefusal(cw, status, ev.Reason)
	return false
}

// writeRefusal writes a complete response the proxy answers itself.
func writeRefusal(w io.Writer, status int, reason string) error {
	line := clip1(reason)
	body := "agentbox: " + line + "\n"
	msg := "HTTP/1.1 " + strconv.Itoa(status) + " " + statusText(status) + "\r\n" +
		ReasonHeader + ": " + line + "\r\n" +
		"Content-Type: text/plain; charset=utf-8\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\nConnection: close\r\n\r\n" + body
	_, err := io.WriteString(w, msg)
	return err
}

// clip1 keeps a reason on one header-safe line.
func clip1(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 {
			return '?'
		}
		return r
	}, s)
}

// rawPath is the request's path exactly as sent (escaped, no query).
func rawPath(req *http.Request) string {
	p, _, _ := strings.Cut(req.RequestURI, "?")
	if !strings.HasPrefix(p, "/") {
		if _, rest, ok := strings.Cut(p, "://"); ok {
			p = "/"
			if i := strings.Index(rest, "/"); i >= 0 {
				p = rest[i:]
			}
		}
	}
	if p == "" {
		p = "/"
	}
	return p
}
