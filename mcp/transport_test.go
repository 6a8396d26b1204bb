package mcp

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzDecodeLine: whatever a client sends, decodeLine either returns a
// message or an error code, and the error line it is answered with is one
// valid JSON-RPC response on one line.
func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{"", "x", "{}", "[]", "42", `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, `{"jsonrpc":"1.0","id":"a","method":"x"}`, `{"jsonrpc":"2.0","id":1,"result":{}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		msg, code, why := decodeLine(line, false)
		if (msg == nil) == (code == 0) {
			t.Fatalf("%q: message %v and code %d", line, msg, code)
		}
		if code == 0 {
			return
		}
		out := errorLine(idOf(line), code, why)
		if strings.Count(string(out), "\n") != 1 || !json.Valid(out) {
			t.Fatalf("%q: error line %q", line, out)
		}
	})
}

// TestReadLineTooLong: an over-long line is consumed to its end and the
// next line is read whole.
func TestReadLineTooLong(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("a", 100)+"\n{}\n"), 16)
	line, long, err := readLine(r, 50)
	if !long || err != nil || len(line) > 50+256 {
		t.Fatalf("long line: %q %v %v", line, long, err)
	}
	line, long, err = readLine(r, 50)
	if long || err != nil || string(line) != "{}" {
		t.Fatalf("next line: %q %v %v", line, long, err)
	}
}
