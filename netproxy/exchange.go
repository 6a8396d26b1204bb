package netproxy

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/policy"
)

// exchange serves one request read from the client inside an intercepted
// connection (or one plain HTTP request when the broker is on): the rules
// decide it, placeholders are checked and replaced, the request goes to the
// upstream (uw/ubr) and the scrubbed response back to cw. It fills ev and
// reports whether both connections may carry another request.
func (p *Proxy) exchange(cw io.Writer, req *http.Request, uw io.Writer, ubr *bufio.Reader, t policy.NetTarget, overTLS bool, ev *Event) bool {
	b := p.cfg.Broker
	defer req.Body.Close()
	ev.Method, ev.Path = req.Method, req.URL.EscapedPath()
	if req.URL.RawQuery != "" {
		ev.Path += "?" + req.URL.RawQuery
	}
	ev.Decision = Deny
	call := b.call()
	ev.CallID = call.ID

	upath := req.URL.Path
	if upath == "" {
		upath = "/"
	}
	used := b.placeholdersIn(req)
	inBody, err := b.placeholdersInBody(req)
	if err != nil {
		ev.Err = "read request body: " + err.Error()
		return false
	}
	carried := union(used, inBody) // for misuse; only headers are substituted
	if ambiguousPath(req.URL) && (b.Rules.HasRules(t) || len(carried) > 0) {
		return p.answer(cw, ev, 403, RuleRequest, "", fmt.Sprintf("%s %s refused: a path with dot segments, empty segments or encoded slashes is ambiguous to the rules; send it normalised", req.Method, t), carried, "")
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
	for _, s := range used {
		why := ""
		switch {
		case !s.Spec.MatchesHost(t):
			why = fmt.Sprintf("%s is not one of secrets.%s.hosts", t, s.Spec.Name)
		case !b.Rules.SecretDuring(s.Spec, call.Command):
			why = fmt.Sprintf("secrets.%s is bound to calls matching %q and the running call (%s) does not match", s.Spec.Name, s.Spec.DuringText(), orNone(call.ID))
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
			substitute(req.Header, s.Placeholder, s.Value)
		}
		ev.Secret = strings.Join(names, ",")
		sum = sha256.New()
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(req.Body, sum), req.Body}
	}
	scrub := b.secretHost(t)
	if scrub {
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
	if vals := b.values(); len(vals) > 0 {
		for k, vs := range resp.Header {
			for i := range vs {
				vs[i] = scrubString(vs[i], vals)
			}
			resp.Header[k] = vs
		}
		if ce := strings.ToLower(resp.Header.Get("Content-Encoding")); scrub && ce != "" && ce != "identity" {
			if ce != "gzip" {
				ev.Err = "response encoded as " + ce
				p.answer(cw, ev, 502, ev.Rule, ev.RuleText, fmt.Sprintf("%s %s%s: the upstream answered with Content-Encoding %s, which the proxy cannot scrub of secrets", req.Method, t, upath, clip(ce)), nil, "")
				ev.Decision = Allow
				return false
			}
			zr, err := gzip.NewReader(resp.Body)
			if err != nil {
				ev.Err = "gzip: " + err.Error()
				return false
			}
			resp.Body = struct {
				io.Reader
				io.Closer
			}{zr, resp.Body}
			resp.Header.Del("Content-Encoding")
			resp.Header.Del("Content-Length")
			resp.ContentLength = -1
			resp.TransferEncoding = []string{"chunked"}
		}
		resp.Body = struct {
			io.Reader
			io.Closer
		}{newScrubReader(resp.Body, vals), resp.Body}
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

// ambiguousPath reports a path whose meaning depends on who normalises
// it: dot segments, empty segments, encoded slashes or backslashes.
func ambiguousPath(u interface{ EscapedPath() string }) bool {
	raw := u.EscapedPath()
	low := strings.ToLower(raw)
	if strings.Contains(low, "%2f") || strings.Contains(low, "%5c") || strings.Contains(low, "%2e") || strings.Contains(raw, "\\") {
		return true
	}
	if raw == "" || raw == "/" {
		return false
	}
	trimmed := strings.TrimSuffix(raw, "/")
	return path.Clean(trimmed) != trimmed
}

// placeholdersIn lists the secrets whose placeholder appears, exactly, in
// the request's target or headers (Basic credentials decoded).
func (b *Broker) placeholdersIn(req *http.Request) []Secret {
	var hay strings.Builder
	hay.WriteString(req.RequestURI)
	hay.WriteByte('\n')
	for k, vs := range req.Header {
		hay.WriteString(k)
		for _, v := range vs {
			hay.WriteByte('\n')
			hay.WriteString(v)
			if u, pw, ok := basic(v); ok {
				hay.WriteString("\n" + u + "\n" + pw)
			}
		}
	}
	s := hay.String()
	var out []Secret
	for _, sec := range b.Secrets {
		if strings.Contains(s, sec.Placeholder) {
			out = append(out, sec)
		}
	}
	return out
}

// bodyScanBytes is how much of a request body is read ahead and searched
// for placeholders before the request is sent.
const bodyScanBytes = 64 << 10

// placeholdersInBody lists the secrets whose placeholder appears in the
// first bodyScanBytes of the body; the body is left whole for sending.
func (b *Broker) placeholdersInBody(req *http.Request) ([]Secret, error) {
	if req.Body == nil || req.Body == http.NoBody || len(b.Secrets) == 0 {
		return nil, nil
	}
	buf := make([]byte, bodyScanBytes)
	n, err := io.ReadFull(req.Body, buf)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	buf = buf[:n]
	req.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), req.Body), req.Body}
	var out []Secret
	for _, s := range b.Secrets {
		if bytes.Contains(buf, []byte(s.Placeholder)) {
			out = append(out, s)
		}
	}
	return out, nil
}

func union(a, b []Secret) []Secret {
	out := append([]Secret(nil), a...)
	for _, s := range b {
		dup := false
		for _, x := range out {
			dup = dup || x.Placeholder == s.Placeholder
		}
		if !dup {
			out = append(out, s)
		}
	}
	return out
}

// basic decodes "Basic base64(user:pass)".
func basic(v string) (user, pass string, ok bool) {
	scheme, enc, found := strings.Cut(strings.TrimSpace(v), " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}

// substitute puts value in place of the placeholder in every header value,
// inside Basic credentials too.
func substitute(h http.Header, placeholder, value string) {
	for k, vs := range h {
		for i, v := range vs {
			if u, pw, ok := basic(v); ok && (strings.Contains(u, placeholder) || strings.Contains(pw, placeholder)) {
				cred := strings.ReplaceAll(u, placeholder, value) + ":" + strings.ReplaceAll(pw, placeholder, value)
				vs[i] = "Basic " + base64.StdEncoding.EncodeToString([]byte(cred))
				continue
			}
			vs[i] = strings.ReplaceAll(v, placeholder, value)
		}
		h[k] = vs
	}
}
