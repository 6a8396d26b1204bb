package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	root "github.com/agentbox/agentbox"
)

// looseLocal is the policy of issue 28: the built-in default without 26 of
// its files.write.deny entries, and background: keep.
func looseLocal(t *testing.T) string {
	t.Helper()
	src := string(root.DefaultPolicy)
	start := strings.Index(src, "      - \".git/modules/**\"")
	end := strings.Index(src, "      - \"agentbox.yaml\"")
	if start < 0 || end < 0 {
		t.Fatal("cannot find the default's write-deny list")
	}
	if n := strings.Count(src[start:end], "\n      - ") + 1; n != 26 {
		t.Fatalf("the cut drops %d entries, want 26", n)
	}
	return strings.Replace(src[:start]+src[end:], "background: kill", "background: keep", 1)
}

// A ./agentbox.yaml that drops 26 write-deny entries of the default and
// keeps background processes is looser: without a terminal it is refused
// (nothing runs, no engine needed), and the refusal says what is looser.
func TestTrustStructuralComparison(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "agentbox.yaml"), looseLocal(t), 0o644)
	ws := t.TempDir()
	r := abCmd{dir: dir}.run(t, "exec", "--workspace", ws, "--", "touch ran")
	if r.code != 2 || !strings.Contains(r.stderr, "looser than the built-in default") {
		t.Fatalf("loose local policy: %d %q", r.code, r.stderr)
	}
	for _, want := range []string{"sandbox.background: keep", `files.write.deny[4] ".git/modules/**" is not kept`, "and ", "--policy"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the refusal does not say %q: %s", want, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(ws, "ran")); err == nil {
		t.Fatal("something ran under an untrusted policy")
	}
}

func TestPolicyCheckWithinAndDiff(t *testing.T) {
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.yaml")
	writeFile(t, loose, strings.Replace(string(root.DefaultPolicy), "    - match: \"rm -rf ~\"\n      why: never wipe the home directory\n", "", 1), 0o644)
	strict := filepath.Join(dir, "strict.yaml")
	writeFile(t, strict, strings.Replace(string(root.DefaultPolicy), "\n  default: ask", "\n  default: deny", 1), 0o644)
	in := abCmd{dir: dir}

	r := in.run(t, "policy", "check", strict, "--within", "default")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "ok: ") {
		t.Errorf("check strict --within default: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = in.run(t, "policy", "check", loose, "--within", "default")
	if r.code != 1 || !strings.Contains(r.stdout, `commands.deny[7] "rm -rf ~" (deny) is not kept`) || !strings.Contains(r.stdout, "e.g. command `rm -rf '~'`") {
		t.Errorf("check loose --within default: %d %q %q", r.code, r.stdout, r.stderr)
	}
	r = in.run(t, "policy", "check", "--json", loose, "--within", "default")
	var rep struct {
		Holds  bool `json:"holds"`
		Looser []struct {
			Field   string `json:"field"`
			Example struct {
				Subject, New, Boundary string
			} `json:"example"`
		} `json:"looser"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Holds || len(rep.Looser) == 0 || rep.Looser[0].Example.New != "allow" || rep.Looser[0].Example.Boundary != "deny" {
		t.Errorf("check --json: %d %v %q", r.code, err, r.stdout)
	}
	r = in.run(t, "policy", "diff", "default", loose)
	if r.code != 1 || !strings.Contains(r.stdout, "looser") || !strings.Contains(r.stdout, "rm -rf '~'") || strings.Contains(r.stdout, "stricter") {
		t.Errorf("diff default loose: %d %q", r.code, r.stdout)
	}
	r = in.run(t, "policy", "diff", loose, "default")
	if r.code != 1 || !strings.Contains(r.stdout, "stricter") || !strings.Contains(r.stdout, "rm -rf '~'") {
		t.Errorf("diff loose default: %d %q", r.code, r.stdout)
	}
	if r = in.run(t, "policy", "diff", "default", "default"); r.code != 0 {
		t.Errorf("diff default default: %d %q", r.code, r.stdout)
	}
	if r = in.run(t, "policy", "check", filepath.Join(dir, "missing.yaml"), "--within", "default"); r.code != 2 {
		t.Errorf("check a missing file: %d %q", r.code, r.stderr)
	}
}
