package agent

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/policy"
)

type memStore struct{ p []string }

func (m *memStore) Prefixes() []string   { return m.p }
func (m *memStore) Add(p []string) error { m.p = append(m.p, p...); return nil }
func (m *memStore) Where() string        { return "memory" }
func askCmd(t *testing.T, cmd string) ApprovalRequest {
	t.Helper()
	d := policy.Default().Decide(policy.Action{Kind: policy.Command, Command: cmd})
	if d.Verdict != policy.Ask {
		t.Fatalf("%q: want ask, got %s", cmd, d.Verdict)
	}
	return ApprovalRequest{Tool: ToolExecuteBash, Subject: cmd, Decision: d}
}

// "r" denies with the user's reason as the note the model sees.
func TestPromptReasonGoesToModel(t *testing.T) {
	p := NewPrompt(strings.NewReader("r\nuse make instead\n"), io.Discard)
	ap, err := p.Approve(context.Background(), askCmd(t, "frob-tool x"))
	if err != nil || ap.Allow || !strings.Contains(ap.Note, "use make instead") {
		t.Fatalf("%+v %v", ap, err)
	}
	if txt := denialText(ToolExecuteBash, askCmd(t, "frob-tool x").Decision, policy.Deny, ap.Note); !strings.Contains(txt, "use make instead") {
		t.Errorf("the model is not told: %s", txt)
	}
}

// With a store, "always" works for a command no rule matched, as its exact
// prefix, and Remembered allows it later without asking; a script with
// another asking command still asks.
func TestAlwaysSavedAsPrefix(t *testing.T) {
	st := &memStore{}
	p := NewPrompt(strings.NewReader("a\n"), io.Discard)
	p.Store = st
	ap, err := p.Approve(context.Background(), askCmd(t, "frob-tool x"))
	if err != nil || !ap.Allow || len(st.p) != 1 || st.p[0] != "frob-tool x" {
		t.Fatalf("%+v %v %v", ap, err, st.p)
	}
	r := Remembered{Store: st, Next: DenyAll{}}
	if ap, _ := r.Approve(context.Background(), askCmd(t, "frob-tool x --more")); !ap.Allow {
		t.Errorf("remembered prefix not allowed: %+v", ap)
	}
	for _, cmd := range []string{"frob-tool y", "frob-tool x; other-tool z", "frob-toolx"} {
		if ap, _ := r.Approve(context.Background(), askCmd(t, cmd)); ap.Allow {
			t.Errorf("%q allowed by the prefix `frob-tool x`", cmd)
		}
	}
}

// "always" keeps the program and its subcommand, never the arguments and
// message, and matches as the policy's rules match: by basename and word
// prefix, git's global options skipped.
func TestAlwaysMatchesLikeRules(t *testing.T) {
	ctx := context.Background()
	st := &memStore{}
	p := NewPrompt(strings.NewReader("a\n"), io.Discard)
	p.Store = st
	if ap, err := p.Approve(ctx, askCmd(t, ".venv/bin/pip install requests==2.0")); err != nil || !ap.Allow || len(st.p) != 1 || st.p[0] != "pip install" {
		t.Fatalf("%+v %v %q", ap, err, st.p)
	}
	r := Remembered{Store: st, Next: DenyAll{}}
	for _, cmd := range []string{".venv/bin/pip install pytest", "pip install -e .", "/usr/bin/pip install x"} {
		if ap, _ := r.Approve(ctx, askCmd(t, cmd)); !ap.Allow {
			t.Errorf("%q not allowed by the saved `pip install`: %+v", cmd, ap)
		}
	}
	if ap, _ := r.Approve(ctx, askCmd(t, "pip3 install x")); ap.Allow {
		t.Errorf("pip3 install allowed by `pip install`")
	}

	pol, err := policy.Parse("p.yaml", []byte("version: 1\nextends: none\ncommands:\n  default: ask\n"))
	if err != nil {
		t.Fatal(err)
	}
	ask := func(cmd string) ApprovalRequest {
		d := pol.Decide(policy.Action{Kind: policy.Command, Command: cmd})
		if d.Verdict != policy.Ask {
			t.Fatalf("%q: %s", cmd, d.Verdict)
		}
		return ApprovalRequest{Tool: ToolExecuteBash, Subject: cmd, Decision: d}
	}
	for cmd, want := range map[string]string{
		`git -c user.email=x@y commit -m "fix the parser"`: "git commit",
		`git -C sub log --oneline`:                         "git log",
		`make test`:                                        "make test",
		`python3 -m pytest -q`:                             "python3",
		`./run.sh --fast`:                                  "run.sh",
		`npm run build -- --watch`:                         "npm run",
		`/usr/bin/touch a.txt`:                             "touch",
	} {
		if got := ruleFor(ask(cmd)).prefixes; len(got) == 0 || got[len(got)-1] != want {
			t.Errorf("%s: offered %q, want %q", cmd, got, want)
		}
	}
	st = &memStore{p: []string{"git commit"}}
	r = Remembered{Store: st, Next: DenyAll{}}
	for cmd, allow := range map[string]bool{
		`git commit -m "another"`:               true,
		`git -c user.name=y commit --amend`:     true,
		`/usr/bin/git commit -q`:                true,
		`git push`:                              false,
		`git -c commit.gpgsign=false push`:      false,
		`git commit -m x; git push origin main`: false,
	} {
		if ap, _ := r.Approve(ctx, ask(cmd)); ap.Allow != allow {
			t.Errorf("%s: allowed %v, want %v", cmd, ap.Allow, allow)
		}
	}
}
