package netproxy

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"slices"
	"strings"
)

// placeholdersIn lists the secrets whose placeholder appears, exactly,
// in a header the secret names (used: substituted there, Basic
// credentials decoded), and those whose placeholder appears anywhere else
// in the request head: the target, another header's name or value
// (stray: never substituted, refused).
func (b *Broker) placeholdersIn(req *http.Request) (used, stray []Secret) {
	for _, sec := range b.Secrets {
		ph := sec.Placeholder
		if strings.Contains(req.RequestURI, ph) || (req.URL != nil && strings.Contains(req.URL.String(), ph)) {
			stray = append(stray, sec)
			continue
		}
		inNamed, elsewhere := false, false
		for k, vs := range req.Header {
			named := slices.Contains(sec.Spec.Headers, k)
			if strings.Contains(k, ph) {
				elsewhere = true
			}
			for _, v := range vs {
				has := strings.Contains(v, ph)
				if u, pw, ok := basic(v); ok {
					has = has || strings.Contains(u, ph) || strings.Contains(pw, ph)
				}
				if has && named {
					inNamed = true
				} else if has {
					elsewhere = true
				}
			}
		}
		switch {
		case elsewhere:
			stray = append(stray, sec)
		case inNamed:
			used = append(used, sec)
		}
	}
	return used, stray
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

// substitute puts value in place of the placeholder in the values of the
// headers named, inside Basic credentials too.
func substitute(h http.Header, names []string, placeholder, value string) {
	for _, k := range names {
		vs := h[k]
		for i, v := range vs {
			if u, pw, ok := basic(v); ok && (strings.Contains(u, placeholder) || strings.Contains(pw, placeholder)) {
				cred := strings.ReplaceAll(u, placeholder, value) + ":" + strings.ReplaceAll(pw, placeholder, value)
				vs[i] = "Basic " + base64.StdEncoding.EncodeToString([]byte(cred))
				continue
			}
			vs[i] = strings.ReplaceAll(v, placeholder, value)
		}
	}
}
