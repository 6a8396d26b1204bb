package netproxy

import (
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// scrubResponse makes an intercepted upstream's response safe to hand to
// the sandbox while a secret exists, by construction rather than by
// pattern where it can: the reason phrase is replaced by the standard one,
// trailers are dropped, header names and values are scrubbed, and the body
// is decoded from every content encoding and scrubbed as it streams. An
// encoding without a decoder here (br, zstd, compress, anything unknown)
// is an error: the caller refuses the response.
func scrubResponse(resp *http.Response, sc *scrubber) error {
	resp.Status = "" // Write then sends the standard reason phrase
	resp.Trailer = nil
	h := make(http.Header, len(resp.Header))
	for k, vs := range resp.Header {
		k = sc.String(k)
		for _, v := range vs {
			h[k] = append(h[k], sc.String(v))
		}
	}
	resp.Header = h
	if resp.Body == nil || resp.Body == http.NoBody {
		return nil
	}
	var codings []string
	for _, v := range h.Values("Content-Encoding") {
		for _, c := range strings.Split(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	for _, c := range codings {
		if c != "gzip" && c != "x-gzip" && c != "deflate" {
			return fmt.Errorf("the upstream answered with Content-Encoding %s, which the proxy cannot decode to scrub of secrets (gzip and deflate only); ask for another encoding with Accept-Encoding", clip(c))
		}
	}
	body := io.Reader(resp.Body)
	for i := len(codings) - 1; i >= 0; i-- { // the last applied is undone first
		var err error
		switch codings[i] {
		case "deflate":
			body, err = zlib.NewReader(body)
		default:
			body, err = gzip.NewReader(body)
		}
		if err != nil {
			return fmt.Errorf("the upstream's %s body does not decode (%v); it cannot be scrubbed of secrets", codings[i], err)
		}
	}
	if len(codings) > 0 {
		h.Del("Content-Encoding")
		h.Del("Content-Length")
		resp.ContentLength = -1
		resp.TransferEncoding = []string{"chunked"}
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{newScrubReader(body, sc), resp.Body}
	return nil
}
