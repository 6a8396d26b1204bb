package audit

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

// Test tokens are assembled at run time so that this file holds none.
func rep(s string, n int) string { return strings.Repeat(s, n) }

func TestBuiltinDetectors(t *testing.T) {
	red := Redactor(Options{}) // no policy patterns, no known secrets
	cases := []struct{ name, in, secret string }{
		{"aws access key id", "key=" + "AKIA" + "IOSFODNN7EXAMPLE" + " ok", "AKIAIOSFODNN7EXAMPLE"},
		{"aws secret", "aws_secret_access_key = " + rep("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 1), "wJalrXUtnFEMI/K7MDENG"},
		{"ghp", "token ghp_" + rep("a1B2", 9) + " end", "ghp_a1B2"},
		{"gho", "gho_" + rep("Z9y8", 9), "gho_Z9y8"},
		{"github_pat", "github_pat_" + rep("11ABCDEFG", 9) + "x", "github_pat_11"},
		{"openai sk-", "OPENAI_API_KEY is sk-" + rep("abcD1234", 5), "sk-abcD"},
		{"openai sk-proj-", "sk-proj-" + rep("x_Y-z9", 10), "sk-proj-x_Y"},
		{"stripe sk_live_", "sk_live_" + rep("4eC39HqLyjWD", 2), "sk_live_4eC3"},
		{"slack", "xoxb-" + "123456789012-1234567890123-" + rep("AbCd", 6), "xoxb-1234"},
		{"bearer", "Authorization: Bearer " + rep("abc.DEF-123_", 3), "abc.DEF-123_abc"},
		{"jwt", "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "dozjgNryP4J3"},
		{"url password", "git clone https://bob:" + "s3cr3tPassw0rd" + "@git.example.com/x.git", "s3cr3tPassw0rd"},
		{"json api_key", `{"name": "x", "api_key": "` + "live-" + rep("q8", 10) + `"}`, "live-q8q8"},
		{"json password", `{"db_password":"` + "hunter2hunter2" + `"}`, "hunter2hunter2"},
		{"env assignment", "export MY_API_KEY=" + "abcdef0123456789", "abcdef0123456789"},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEow" + rep("IBAAKCAQEA", 5) + "\n-----END RSA PRIVATE KEY-----\nafter", "MIIEow"},
		{"private key cut off", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA" + rep("Q", 30), "b3BlbnNzaC1"},
		{"google api key", "AIza" + rep("SyD-9tSrke72PouQMnMX", 1) + rep("a", 15), "AIzaSyD"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := red(c.in)
			if strings.Contains(out, c.secret) || !strings.Contains(out, "[REDACTED") {
				t.Fatalf("not redacted: %q -> %q", c.in, out)
			}
		})
	}
	if out := red("git clone https://bob:s3cr3t@example.com/x"); !strings.Contains(out, "https://bob:") {
		t.Errorf("the URL's user should stay: %q", out)
	}
	if out := red("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\nafter"); !strings.HasSuffix(out, "\nafter") {
		t.Errorf("text after the key block was eaten: %q", out)
	}
}

// Ordinary text, hashes and ids go through unchanged.
func TestBuiltinDetectorsLeaveOrdinaryText(t *testing.T) {
	red := Redactor(Options{})
	for _, s := range []string{
		"ls -la && go test ./...",
		"pip install scikit-learn; import sklearn",
		"commit 2b34694e1f0c8c3b8d6c9a1e2f3a4b5c6d7e8f90",
		strings.Repeat("ab", 32), // a sha256
		"550e8400-e29b-41d4-a716-446655440000",
		"the bearer of bad news",
		"https://example.com/path?q=1",
		`{"total_tokens": 1285, "finish_reason": "stop"}`,
		"password: (see the vault)",
		"AKIA is a prefix",
	} {
		if out := red(s); out != s {
			t.Errorf("changed: %q -> %q", s, out)
		}
	}
}

// A known secret is caught in its hex and base64 forms, also inside longer
// encoded text at any alignment.
func TestKnownSecretEncodedForms(t *testing.T) {
	secret := "s3cret-value-" + rep("Zq", 6)
	red := Redactor(Options{Secrets: []string{secret}})
	forms := map[string]string{
		"hex":       hex.EncodeToString([]byte(secret)),
		"HEX":       strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"base64":    base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64url": base64.URLEncoding.EncodeToString([]byte(secret)),
	}
	for pre := 0; pre < 3; pre++ {
		forms["base64 inside, offset "+string(rune('0'+pre))] = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", pre) + "TOKEN=" + secret + "\n"))
	}
	for name, enc := range forms {
		out := red("out: " + enc)
		if !strings.Contains(out, Redacted) {
			t.Errorf("%s form not redacted: %q", name, out)
		}
		// What remains cannot give the secret back.
		if strings.Contains(out, hex.EncodeToString([]byte(secret))[:16]) {
			t.Errorf("%s: %q", name, out)
		}
	}
}

// Effect: a session that prints secrets in every format leaves none of them
// in the log, and the chain still verifies (redaction before hashing).
func TestDetectorsBeforeHashing(t *testing.T) {
	tokens := []string{"ghp_" + rep("k3Y9", 9), "sk-" + rep("proj9x", 6), "AKIA" + "ZZZZ2345ZZZZ2345"}
	known := "known-" + rep("v4", 8)
	out := strings.Join(tokens, "\n") + "\n" + base64.StdEncoding.EncodeToString([]byte(known)) + "\n"
	path := writeLog(t, Options{Secrets: []string{known}},
		&Record{Session: "s", Event: EventSessionStart, Task: "use " + tokens[0]},
		&Record{Session: "s", Event: EventToolCall, Tool: "execute_bash", Phase: PhaseDecision, Decision: "allow",
			Args: map[string]any{"command": "curl -H 'Authorization: Bearer " + rep("tok3n", 4) + "' https://x"}},
		&Record{Session: "s", Event: EventToolCall, Tool: "execute_bash", Phase: PhaseResult, OutputPreview: out},
	)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(tokens, rep("tok3n", 4), base64.StdEncoding.EncodeToString([]byte(known))[:12]) {
		if strings.Contains(string(data), s) {
			t.Errorf("%q is in the log", s)
		}
	}
	if rep := verifyBytes(t, data, nil, ""); !rep.Intact {
		t.Fatalf("%s", rep)
	}
}

// BenchmarkRedact4K is the redaction of one 4 KB output preview with a
// known secret and the built-in detectors.
func BenchmarkRedact4K(b *testing.B) {
	red := Redactor(Options{Secrets: []string{"known-secret-value-123"}})
	s := strings.Repeat("drwxr-xr-x 2 u u 4096 Nov 29 18:00 some/dir/name\n", 90)[:4096]
	for b.Loop() {
		red(s)
	}
}
