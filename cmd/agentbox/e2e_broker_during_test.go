package main_test

import (
	"fmt"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// duringUse is the program that is not `git push`: it sends the
// placeholder to the secret's own host and prints the status it got.
const duringUse = `import os, sys, urllib.request, urllib.error
r = urllib.request.Request("https://127.0.0.1:%s/api/use", headers={"Authorization": "Bearer " + os.environ["TOKEN"]})
try:
    code = urllib.request.urlopen(r, timeout=30).status
except urllib.error.HTTPError as e:
    code = e.code
print("USE %%s %%d" %% (sys.argv[1], code), flush=True)
`

// TestBrokerDuringProgramEffect: a secret with during: ["git push"] goes
// only into connections of git push's process tree. In the same call, a
// decoy `git push --help` before python, and python in the background
// beside a real git push, get no substitution (403, secret_misuse alarms);
// the push itself lands with the brokered token and its receipt names
// the program.
func TestBrokerDuringProgramEffect(t *testing.T) { brokerDuringProgram(t, dockerBroker(t)) }

func brokerDuringProgram(t *testing.T, be brokerEnv) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on the host")
	}
	httpBackend := filepath.Join(filepath.Dir(gitBin), "..", "lib", "git-core", "git-http-backend")
	if _, err := os.Stat(httpBackend); err != nil {
		t.Skipf("no git-http-backend: %v", err)
	}
	const value = "duringE2E-7f3a9b2c4d5e6f708192"
	dir := t.TempDir()
	repos, seed := filepath.Join(dir, "repos"), filepath.Join(dir, "seed")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", seed},
		{"-C", seed, "-c", "user.name=h", "-c", "user.email=h@h", "commit", "-q", "--allow-empty", "-m", "seed"},
		{"clone", "-q", "--bare", seed, filepath.Join(repos, "repo.git")},
		{"--git-dir", filepath.Join(repos, "repo.git"), "config", "http.receivepack", "true"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	ca := newTestCA(t)
	var mu sync.Mutex
	var withValue []string
	gitCGI := &cgi.Handler{Path: httpBackend, Root: "/git",
		Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=x", "HOME=" + dir}, InheritEnv: []string{"PATH"}}
	port := ca.serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pw, _ := r.BasicAuth()
		if strings.Contains(r.Header.Get("Authorization"), value) || pw == value {
			mu.Lock()
			withValue = append(withValue, r.URL.Path)
			mu.Unlock()
		}
		if strings.HasPrefix(r.URL.Path, "/git/") {
			if pw != value {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "auth required", http.StatusUnauthorized)
				return
			}
			gitCGI.ServeHTTP(w, r)
		}
	}))
	caFile := writeFile(t, filepath.Join(dir, "upstream-ca.pem"), string(ca.pem), 0o644)
	pol := writeFile(t, filepath.Join(dir, "during.yaml"), fmt.Sprintf(`version: 1
commands: {default: allow}
sandbox: {network: proxy, background: keep%s}
network:
  allow: ["127.0.0.1"]
  upstream_ca: %s
secrets:
  TOKEN: {from: "env:DURING_E2E_TOKEN", hosts: ["127.0.0.1:%s"], during: ["git push"]}
`, be.sandbox, caFile, port), 0o644)
	ws := t.TempDir()
	writeFile(t, filepath.Join(ws, "use.py"), fmt.Sprintf(duringUse, port), 0o644)
	log := filepath.Join(dir, "audit.jsonl")
	// (NO_PROXY keeps 127.0.0.1 direct; the upstreams are the host's
	// loopback, reached through the proxy.)
	script := strings.Join([]string{
		`url="https://x:$TOKEN@127.0.0.1:` + port + `/git/repo.git"`,
		`env -u NO_PROXY -u no_proxy git clone -q "$url" /tmp/c 2>&1 | tail -1; echo "CLONE ${PIPESTATUS[0]}"`, // not git push: refused
		`git push --help >/dev/null 2>&1; env -u NO_PROXY -u no_proxy python3 use.py decoy`,
		`git init -q /tmp/w && git -C /tmp/w -c user.name=a -c user.email=a@b commit -q --allow-empty -m from-the-sandbox`,
		`env -u NO_PROXY -u no_proxy python3 use.py background & env -u NO_PROXY -u no_proxy git -C /tmp/w push -q "$url" HEAD:refs/heads/sandbox 2>&1 | tail -1; echo "PUSH ${PIPESTATUS[0]}"; wait`,
	}, "\n")
	r := be.run(t, []string{"DURING_E2E_TOKEN=" + value}, "exec", "--approve", "allow", "--workspace", ws, "--policy", pol, "--audit", log, "--", script)
	if r.code != 0 {
		t.Fatalf("exec: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"USE decoy 403", "USE background 403", "PUSH 0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("want %q in the output:\n%s\n%s", want, r.stdout, r.stderr)
		}
	}
	// git clone is not git push: it could not authenticate (it got no
	// value; its own seed clone was made on the host).
	if strings.Contains(r.stdout, "CLONE 0") {
		t.Errorf("git clone got the secret: %s", r.stdout)
	}
	mu.Lock()
	for _, p := range withValue {
		if p == "/api/use" {
			t.Errorf("python's request carried the value")
		}
	}
	if len(withValue) == 0 {
		t.Errorf("the push never carried the value")
	}
	mu.Unlock()
	if out, err := exec.Command("git", "--git-dir", filepath.Join(repos, "repo.git"), "log", "-1", "--format=%s", "sandbox").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "from-the-sandbox" {
		t.Errorf("the push did not land: %v %s", err, out)
	}
	if strings.Contains(r.stdout+r.stderr, value) {
		t.Error("the value reached the terminal")
	}
	recs := brokerAudit(t, log, value)
	rc, alarms := receipts(recs, "TOKEN"), misuseAlarms(recs)
	for _, rec := range rc {
		if len(rec.Argv) < 2 || filepath.Base(rec.Argv[0]) != "git" || !strings.Contains(strings.Join(rec.Argv, " "), "push") {
			t.Errorf("a receipt does not name git push: %s", rec.line)
		}
	}
	for _, a := range alarms {
		t.Logf("alarm: %s", a.line)
	}
	if len(rc) == 0 || len(alarms) < 3 {
		t.Errorf("receipts %d (want > 0), secret_misuse alarms %d (want >= 3: clone, decoy, background)", len(rc), len(alarms))
	}
}
