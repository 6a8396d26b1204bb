package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/agentbox/agentbox/policy"
)

// hopHeaders are the hop-by-hop headers a proxy must not forward (RFC 9110
// 7.6.1), plus the proxy's own credentials.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization", "Proxy-Authenticate",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func dropHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for _, name := range strings.Split(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// forward sends the one plain HTTP request held in br to up in origin
// form with Connection: close, and copies the response back to c. The body
// is framed by its Content-Length or chunking, so nothing the client sends
// after it reaches the upstream.
func forward(c net.Conn, br *bufio.Reader, up net.Conn, t policy.NetTarget, ev *Event) error {
	req, err := http.ReadRequest(br)
	if err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	defer req.Body.Close()
	// The upstream sees exactly the target that was checked, in canonical form.
	req.Host = t.String()
	if t.Port == 80 {
		req.Host = strings.TrimSuffix(req.Host, ":80")
	}
	req.URL.Host = req.Host
	continueSent := false
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		req.Header.Del("Expect")
		continueSent = true
	}
	dropHopHeaders(req.Header)
	if req.Header.Get("User-Agent") == "" {
		req.Header["User-Agent"] = []string{""} // forward its absence: Write adds none for an empty value
	}
	req.Close = true
	req.RequestURI = ""
	if continueSent {
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return fmt.Errorf("client: %w", err)
		}
	}
	upW := &countWriter{w: up}
	defer func() { ev.BytesUp = upW.n }()
	if err := req.Write(upW); err != nil {
		return fmt.Errorf("send request: %w", err)
	}
	ubr := bufio.NewReader(up)
	var resp *http.Response
	for {
		resp, err = http.ReadResponse(ubr, req)
		if err != nil {
			return fmt.Errorf("read response: %w", err)
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close() // an interim 1xx answer; the final one follows
	}
	defer resp.Body.Close()
	ev.Status = resp.StatusCode
	dropHopHeaders(resp.Header)
	resp.Close = true
	downW := &countWriter{w: c}
	err = resp.Write(downW)
	ev.BytesDown = downW.n
	if err != nil {
		return fmt.Errorf("send response: %w", err)
	}
	return nil
}
