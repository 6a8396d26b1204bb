package policy

import (
	"strings"
	"testing"
)

func TestNormalizePath(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "/",
		"/":                  "/",
		"/a/b":               "/a/b",
		"/a//b///c":          "/a/b/c",
		"//a":                "/a",
		"/a/./b/../c":        "/a/c",
		"/a/%2e%2E/admin":    "/admin",
		"/%61dmin/%7Ekeys":   "/admin/~keys",
		"/a/b/":              "/a/b/",
		"/a/b/.":             "/a/b/",
		"/../../etc":         "/etc",
		"/a/%c3%a9":          "/a/%C3%A9",
		"/a/%3f":             "/a/%3F",
		"/repos/Me/Proj.git": "/repos/Me/Proj.git",
	} {
		got, err := NormalizePath(in)
		if err != nil || got != want {
			t.Errorf("NormalizePath(%q) = %q, %v; want %q", in, got, err, want)
		}
		if again, _ := NormalizePath(got); again != got {
			t.Errorf("not idempotent: %q -> %q -> %q", in, got, again)
		}
	}
	for _, bad := range []string{"/a%2fb", "/a%2Fb", "/a%5cb", "/a\\b", "/a%", "/a%zz", "/a%00", "a/b", "/a\x01"} {
		if got, err := NormalizePath(bad); err == nil {
			t.Errorf("NormalizePath(%q) = %q, want an error", bad, got)
		}
	}
}

// TestRulesMatchNormalisedPaths: case and slash variants of a denied path
// are denied, of an allowed one allowed; a case-sensitive rule matches
// byte for byte; what stays ambiguous is denied on a host with rules.
func TestRulesMatchNormalisedPaths(t *testing.T) {
	p, err := Parse("r.yaml", []byte(`version: 1
sandbox: {network: proxy}
network:
  allow: ["api.example.com", "other.example.com"]
  rules:
    - {host: api.example.com, paths: ["/admin/**", "/user/keys/"], action: deny}
    - {host: api.example.com, methods: [GET], paths: ["/Repos/Me/**"], action: allow}
    - {host: api.example.com, paths: ["/CaseOnly"], case_sensitive: true, action: deny}
    - {host: api.example.com, action: deny}
`))
	if err != nil {
		t.Fatal(err)
	}
	api := NetTarget{Host: "api.example.com", Port: 443}
	for path, want := range map[string]Verdict{
		"/admin/x": Deny, "/ADMIN/x": Deny, "/Admin/x": Deny, "//admin//x": Deny, "/x/../admin/x": Deny,
		"/%61dmin/x": Deny, "/%41DMIN": Deny, "/admin": Deny, "/admin/": Deny,
		"/user/keys": Deny, "/user/keys/": Deny, "/USER/Keys//": Deny, "/user/./keys": Deny,
		"/repos/me/proj": Allow, "/REPOS/ME/proj/pulls": Allow, "/repos//me/x/": Allow,
		"/repos/other": Deny, "/CaseOnly": Deny, "/caseonly": Deny, // the last by the catch-all
		"/admin%2Fx": Deny, "/repos/me%2fx": Deny, "/repos\\me": Deny,
	} {
		d := p.DecideRequest(api, "GET", path)
		if d.Verdict != want {
			t.Errorf("GET %s: %v (%s), want %v", path, d.Verdict, d.Reason, want)
		}
	}
	if d := p.DecideRequest(api, "GET", "/caseonly"); d.Rule != "network.rules[3]" {
		t.Errorf("a case-sensitive rule matched another case: %+v", d)
	}
	if d := p.DecideRequest(api, "GET", "/repos/me%2Fx"); !strings.Contains(d.Reason, "encoded slash") {
		t.Errorf("ambiguous path reason: %q", d.Reason)
	}
	// A host without rules: no normalisation is needed to decide.
	if d := p.DecideRequest(NetTarget{Host: "other.example.com", Port: 443}, "GET", "/a%2Fb"); d.Verdict != Allow {
		t.Errorf("host without rules: %+v", d)
	}
}
