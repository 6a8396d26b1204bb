package policy

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestBrokenPolicies")

// TestBrokenPolicies loads every testdata/broken/*.yaml and compares the
// errors with the .golden file beside it (go test -run Broken -update).
func TestBrokenPolicies(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "broken", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no broken policies: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, err := Load(f)
			if err == nil {
				t.Fatal("loaded without error")
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error is not a *LoadError: %v", err)
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run Broken -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s:\n--- got\n%s--- want\n%s", golden, got, want)
			}
		})
	}
}

func TestLoadTooLarge(t *testing.T) {
	big := "version: 1\n# " + strings.Repeat("x", maxPolicyBytes) + "\n"
	f := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(f, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(f)
	if err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Fatalf("got %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v", err)
	}
}

func TestLoadSettings(t *testing.T) {
	p, err := Parse("x.yaml", []byte(`version: 1
sandbox:
  image: img:1
  runtime: runsc
  workspace: copy
  network: open
  user: "1000:1000"
  limits: {cpus: 0.5, memory: 512MB, pids: 64}
  timeouts: {call: 5s, session: 10m}
  output: {max_bytes: 1024}
  env: []
  background: keep
audit:
  redact: ['secret=\S+']
  preview_bytes: 0
  checkpoints: /var/lib/audit-checkpoints/
files:
  read: {allow: ["./src/**", "/workspace/docs/**", "/etc/*"]}
`))
	if err != nil {
		t.Fatal(err)
	}
	s := p.Sandbox
	if s.Image != "img:1" || s.Runtime != "runsc" || s.Workspace != "copy" || s.Network != "open" || s.User != "1000:1000" ||
		s.CPUs != 0.5 || s.MemoryBytes != 512e6 || s.Pids != 64 || s.CallTimeout.Seconds() != 5 || s.SessionTimeout.Minutes() != 10 ||
		s.OutputMaxBytes != 1024 || len(s.Env) != 0 || s.Background != "keep" {
		t.Errorf("%+v", s)
	}
	if p.Audit.PreviewBytes != 0 || len(p.Audit.Redact) != 1 || p.Audit.Checkpoints != "/var/lib/audit-checkpoints" {
		t.Errorf("%+v", p.Audit)
	}
	allow, _ := p.FileRules(false)
	if strings.Join(allow, " ") != "src/** docs/** /etc/*" {
		t.Errorf("globs not cleaned: %q", allow)
	}
}

func TestAuditCheckpointsMustBeAbsolute(t *testing.T) {
	if _, err := Parse("x.yaml", []byte("version: 1\naudit:\n  checkpoints: cps\n")); err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Fatalf("a relative audit.checkpoints was accepted: %v", err)
	}
}

func TestVerdictText(t *testing.T) {
	for _, v := range []Verdict{Allow, Ask, Deny} {
		b, err := v.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var w Verdict
		if err := w.UnmarshalText(b); err != nil || w != v {
			t.Errorf("%v: round trip gave %v, %v", v, w, err)
		}
	}
	var w Verdict
	if err := w.UnmarshalText([]byte("maybe")); err == nil {
		t.Error("accepted maybe")
	}
	if _, err := Verdict(7).MarshalText(); err == nil {
		t.Error("marshalled 7")
	}
}
