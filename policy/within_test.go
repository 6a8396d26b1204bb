package policy

import (
	"strings"
	"testing"

	agentbox "github.com/agentbox/agentbox"
)

func parseT(t testing.TB, name, src string) *Policy {
	t.Helper()
	p, err := Parse(name, []byte(src))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// edit applies replacements to the default policy's text, failing when
// one does not apply.
func editDefault(t testing.TB, pairs ...string) string {
	t.Helper()
	s := string(agentbox.DefaultPolicy)
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("the default policy has no %q", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

func TestWithinDefaultHolds(t *testing.T) {
	def := Default()
	r := Within(def, def, nil)
	if !r.Holds() {
		t.Fatalf("the default is not within itself: %+v", r)
	}
	if r.Probes < 500 {
		t.Errorf("only %d probes decided", r.Probes)
	}
}

func findField(r Report, field, subject string) *Finding {
	for i, f := range r.Looser {
		if f.Field == field && (subject == "" || f.Example != nil && strings.Contains(f.Example.Subject, subject)) {
			return &r.Looser[i]
		}
	}
	return nil
}

// The case of issue 28: a local policy dropping 26 write-deny entries and
// keeping background processes is looser, and says where.
func TestWithinDroppedWriteDenies(t *testing.T) {
	src := string(agentbox.DefaultPolicy)
	start := strings.Index(src, "      - \".git/modules/**\"")
	end := strings.Index(src, "      - \"agentbox.yaml\"")
	if start < 0 || end < 0 {
		t.Fatal("cannot find the write-deny list")
	}
	dropped := strings.Count(src[start:end], "\n      - ") + 1
	src = src[:start] + src[end:]
	src = strings.Replace(src, "background: kill", "background: keep", 1)
	if dropped != 26 {
		t.Fatalf("dropped only %d entries", dropped)
	}
	r := Within(parseT(t, "loose.yaml", src), Default(), nil)
	if r.Holds() {
		t.Fatal("looser policy holds")
	}
	if findField(r, "sandbox.background", "") == nil {
		t.Errorf("background: keep not reported: %v", r.Looser)
	}
	writes := 0
	for _, f := range r.Looser {
		if f.Field == "files.write" && strings.Contains(f.What, "is not kept") {
			writes++
			if f.Example == nil || f.Example.Kind != "write" || f.Example.New != Allow || f.Example.Boundary != Deny {
				t.Errorf("finding without a confirmed write example: %v", f)
			}
		}
	}
	if writes != dropped {
		t.Errorf("%d dropped write-deny entries reported, want %d: %v", writes, dropped, r.Looser)
	}
}

func TestWithinCommandCounterexamples(t *testing.T) {
	cases := []struct {
		name, subject string
		edits         []string
	}{
		{"deny rule dropped", "rm -rf '~'", []string{"    - match: \"rm -rf ~\"\n      why: never wipe the home directory\n", ""}},
		{"ask rule made allow", "git push", []string{"  ask:\n    - git push\n", "    - git push\n  ask:\n"}},
		{"broader allow", "curl", []string{"    - curl\n    - wget\n", "    - wget\n", "    - ls\n", "    - ls\n    - curl\n"}},
		{"glob allow", "s", []string{"    - ls\n", "    - ls\n    - \"s*\"\n"}},
		{"default", "", []string{"  default: ask", "  default: allow"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Within(parseT(t, "n.yaml", editDefault(t, c.edits...)), Default(), nil)
			if r.Holds() {
				t.Fatal("holds")
			}
			f := findField(r, "commands", c.subject)
			if f == nil || f.Example.New >= f.Example.Boundary {
				t.Fatalf("no command counterexample with %q: %v", c.subject, r.Looser)
			}
		})
	}
}

// A policy strictly inside the default is proven within it, with no
// unproven part.
func TestWithinStricterHolds(t *testing.T) {
	src := `version: 1
commands:
  default: deny
  allow: ["git status", "python3 solve.py", "ls -la", "go test ./..."]
  deny: [sudo, "rm -rf ~", "mkfs.*"]
files:
  read: {allow: ["src/**", "README.md"], deny: ["**/.env*", "**/*.pem", "**/*.key", "**/id_*", "**/.netrc", "**/.npmrc", "**/.pypirc", "**/.git-credentials"]}
  write: {allow: ["src/*.py"], deny: [".git/**", "**/.env.*"]}
audit:
  redact: ['(?i)(api[_-]?key|token|secret|password)\s*[:=]\s*\S+']
`
	r := Within(parseT(t, "strict.yaml", src), Default(), nil)
	if !r.Holds() {
		t.Fatalf("stricter policy not within the default: looser %v unproven %v", r.Looser, r.Unproven)
	}
	// and the default is not within it
	if back := Within(Default(), parseT(t, "strict.yaml", src), nil); back.Holds() {
		t.Fatal("the default is within a stricter policy")
	}
}

func TestWithinNetwork(t *testing.T) {
	b := parseT(t, "b.yaml", "version: 1\nsandbox: {network: proxy}\nnetwork: {allow: [\"pypi.org\", \"*.github.com:443\"], deny: [\"10.0.0.0/8\"]}\n")
	in := parseT(t, "in.yaml", "version: 1\nsandbox: {network: proxy}\nnetwork: {allow: [\"api.github.com:443\"], deny: [\"10.0.0.0/8\"]}\n")
	if r := Within(in, b, nil); !r.Holds() {
		t.Fatalf("narrower network not within: %v %v", r.Looser, r.Unproven)
	}
	out := parseT(t, "out.yaml", "version: 1\nsandbox: {network: proxy}\nnetwork: {allow: [\"*.github.com\", \"evil.example\"]}\n")
	r := Within(out, b, nil)
	for _, s := range []string{"evil.example", ".github.com:1"} {
		if findField(r, "network", s) == nil {
			t.Errorf("no network counterexample %q: %v", s, r.Looser)
		}
	}
}

// Credentials and L7 rules count: a secret released to another host, a
// dropped deny rule of network.rules, a tunnel without interception.
func TestWithinNetworkExtras(t *testing.T) {
	b := parseT(t, "b.yaml", credsPolicy)
	if r := Within(b, b, nil); !r.Holds() {
		t.Fatalf("not within itself: %v %v", r.Looser, r.Unproven)
	}
	loose := strings.Replace(credsPolicy, `    - {host: api.example.com, paths: ["/admin/**", "/user/keys"], action: deny}
`, "", 1)
	loose = strings.Replace(loose, `hosts: [example.com], during`, `hosts: [example.com, api.example.com], during`, 1)
	loose = strings.Replace(loose, "  rules:\n", "  passthrough: [\"pypi.org\"]\n  rules:\n", 1)
	r := Within(parseT(t, "loose.yaml", loose), b, nil)
	for _, want := range []string{"network.rules", "secrets", "network.passthrough"} {
		if findField(r, want, "") == nil {
			t.Errorf("%s not reported: %v", want, r.Looser)
		}
	}
}

func TestWithinUnknownBinaries(t *testing.T) {
	b := parseT(t, "b.yaml", "version: 1\ncommands: {unknown_binaries: deny}\n")
	n := parseT(t, "n.yaml", "version: 1\ncommands: {unknown_binaries: ask}\n")
	if findField(Within(n, b, nil), "commands.unknown_binaries", "") == nil {
		t.Error("a looser unknown_binaries is not reported")
	}
	s := Suggest(b, nil)
	var buf strings.Builder
	if err := s.WriteYAML(&buf, nil); err != nil || !strings.Contains(buf.String(), "unknown_binaries: deny") {
		t.Errorf("the suggestion does not keep unknown_binaries: %v\n%s", err, buf.String())
	}
}
