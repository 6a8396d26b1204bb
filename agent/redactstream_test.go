package agent

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/testutil"
)

// A secret cut across chunks is still replaced whole; a private key block
// is held until its END line; other bytes pass unchanged.
func TestRedactStream(t *testing.T) {
	redact := audit.Redactor(audit.Options{Secrets: []string{"hunter2-secret"}})
	key := "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n-----END PRIVATE KEY-----\n"
	in := "plain line\ntoken hunter2-secret here\n" + key + "bytes \xff\xfe stay\nlast without newline"
	for _, size := range []int{1, 3, 7, 64, len(in)} {
		var out bytes.Buffer
		rs := newRedactStream(&out, redact)
		for i := 0; i < len(in); i += size {
			_, _ = rs.Write([]byte(in[i:min(len(in), i+size)]))
		}
		_ = rs.Close()
		got := out.String()
		if strings.Contains(got, "hunter2") || strings.Contains(got, "MIIEvQ") || strings.Contains(got, "BKcw") {
			t.Errorf("chunks of %d: a secret leaked:\n%s", size, got)
		}
		if !strings.HasPrefix(got, "plain line\ntoken [REDACTED] here\n") || !strings.HasSuffix(got, "bytes \xff\xfe stay\nlast without newline") {
			t.Errorf("chunks of %d: %q", size, got)
		}
	}
}

// A long line without a newline is passed on in pieces, bounded; a partial
// line is shown after a short quiet.
func TestRedactStreamBounds(t *testing.T) {
	var out testutil.LockedBuffer
	rs := newRedactStream(&out, func(s string) string { return s })
	line := strings.Repeat("word ", 3*redactHold/5)
	_, _ = rs.Write([]byte(line))
	if len(rs.buf) > redactHold || out.Len() == 0 {
		t.Errorf("held %d bytes, wrote %d", len(rs.buf), out.Len())
	}
	_ = rs.Close()
	if out.String() != line {
		t.Errorf("bytes changed: %d vs %d", out.Len(), len(line))
	}
	var prompt testutil.LockedBuffer
	rs = newRedactStream(&prompt, func(s string) string { return s })
	_, _ = rs.Write([]byte("waiting..."))
	testutil.Eventually(t, 10*time.Second, "the partial line", func() bool { return prompt.String() == "waiting..." })
	_ = rs.Close()
}

// Issue 27: a token printed with a pause in its middle, a password whose
// label came before the pause, and a token across the 64 KiB piece
// boundary of a long line are all redacted whole.
func TestRedactStreamPausesAndPieces(t *testing.T) {
	redact := audit.Redactor(audit.Options{})
	tok := "ghp_" + strings.Repeat("k3Y9", 9)
	for _, c := range []struct{ before, first, second, gone string }{
		{"token: ", tok[:12], tok[12:] + " done\n", tok[4:12]},
		{"db_pass = ", "", "hunter2secret\n", "hunter2"},
		{"mysql -uroot -p", "hunt", "er2secret app\n", "hunter2"},
		{"machine db.example.com login bob password ", "", "s3cretValue\n", "s3cret"},
	} {
		var out testutil.LockedBuffer
		rs := newRedactStream(&out, redact)
		_, _ = rs.Write([]byte("shown " + c.before + c.first))
		rs.quiet() // the pause: the partial line is shown, but no secret part
		if got := out.String(); strings.Contains(got, c.gone[:4]) || (c.first != "" && strings.Contains(got, c.first)) {
			t.Errorf("%q: shown during the pause: %q", c.before, got)
		}
		_, _ = rs.Write([]byte(c.second))
		_ = rs.Close()
		if got := out.String(); strings.Contains(got, c.gone) || !strings.Contains(got, "[REDACTED") || !strings.HasPrefix(got, "shown ") {
			t.Errorf("%q: %q", c.before, got)
		}
		if got := out.String(); c.before == "token: " && !strings.HasPrefix(got, "shown token: [REDACTED") {
			t.Errorf("%q: %q", c.before, got)
		}
	}
	// A token across the cut of a line longer than redactHold.
	for _, at := range []int{redactHold/2 - 10, redactHold / 2, redactHold/2 + 3} {
		var out testutil.LockedBuffer
		rs := newRedactStream(&out, redact)
		pad := strings.Repeat("w ", at/2)
		line := pad + tok + " " + strings.Repeat("x ", redactHold/2+100)
		_, _ = rs.Write([]byte(line))
		_ = rs.Close()
		if got := out.String(); strings.Contains(got, tok[4:14]) || strings.Contains(got, tok[20:30]) || !strings.Contains(got, "[REDACTED:github-token:") {
			t.Errorf("token at %d across the piece boundary leaked", at)
		}
	}
}
