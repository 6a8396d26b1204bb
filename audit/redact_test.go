package audit

import (
	"bytes"
	"os"
	"regexp"
	"testing"
)

var designRedact = regexp.MustCompile(`(?i)(api[_-]?key|token|secret|password)\s*[:=]\s*\S+`)

func TestSecretsNeverReachTheFile(t *testing.T) {
	const apiKey = "sk-test-XYZ0123456789abcdef"
	opts := Options{Key: testKey, Secrets: []string{apiKey, "", "ab"}, Redact: []*regexp.Regexp{designRedact}}
	path := writeLog(t, opts,
		&Record{Session: "s", Event: EventSessionStart, Task: "use key " + apiKey + " please", Model: "gpt"},
		&Record{Session: "s", Event: EventToolCall, Tool: "execute_bash", Phase: PhaseDecision, Decision: "allow",
			Args: map[string]any{"command": "curl -H 'Authorization: Bearer " + apiKey + "' x", "env": []any{map[string]any{"v": "api_key=abc123"}}}},
		&Record{Session: "s", Event: EventToolCall, Phase: PhaseResult, ExitCode: Ptr(0),
			OutputPreview: "config:\napi_key=abc123\nTOKEN: t0k3n-value\nok " + apiKey[:10]},
		&Record{Session: "s", Event: EventError, Error: "401 for key " + apiKey},
		&Record{Session: "s", Event: EventSessionEnd, Answer: "the password=hunter22 and " + apiKey,
			Files: []FileChange{{Path: "secret=leaky/" + apiKey, Change: ChangeAdded}}},
	)
	b, _ := os.ReadFile(path)
	for _, leak := range []string{apiKey, "abc123", "t0k3n-value", "hunter22", "XYZ0123456789"} {
		if bytes.Contains(b, []byte(leak)) {
			t.Errorf("%q found in the log:\n%s", leak, b)
		}
	}
	if !bytes.Contains(b, []byte("[REDACTED]")) || !bytes.Contains(b, []byte("ok sk-test-X")) {
		t.Fatalf("redaction markers missing or over-redacted:\n%s", b)
	}
	// Redaction happens before hashing: the log verifies.
	if rep := verifyFile(t, path, testKey, ""); !rep.Intact {
		t.Fatalf("%v", rep.First)
	}
}

func TestRedactorAndWriterRedact(t *testing.T) {
	red := Redactor(Options{Secrets: []string{"abc", "secretvalue", "secretvalue-long"}, Redact: []*regexp.Regexp{designRedact}})
	for in, want := range map[string]string{
		"abc is short":                "abc is short", // < MinSecretLen: ignored
		"x secretvalue-long y":        "x [REDACTED] y",
		"x secretvalue y":             "x [REDACTED] y",
		"export API-KEY = 42 rest":    "export [REDACTED] rest",
		"nothing here":                "nothing here",
		"Password:hunter2\nnext line": "[REDACTED]\nnext line",
	} {
		if got := red(in); got != want {
			t.Errorf("%q: got %q want %q", in, got, want)
		}
	}
	path := t.TempDir() + "/a.jsonl"
	w, err := Open(path, Options{Secrets: []string{"hunter22"}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got := w.Redact("pw hunter22"); got != "pw [REDACTED]" {
		t.Fatal(got)
	}
	if got := Redactor(Options{})("unchanged"); got != "unchanged" {
		t.Fatal(got)
	}
}
