package docker_test

import (
	"net"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// TestNetworkProxyGitClone: git in the image clones over smart HTTP from
// a git http-backend on the host's loopback, through the proxy.
func TestNetworkProxyGitClone(t *testing.T) {
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Skip("no git http-backend on the host")
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "HOME="+root)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	os.MkdirAll(work, 0o755)
	git(work, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(work, "README"), []byte("through-the-proxy\n"), 0o644)
	git(work, "add", "README")
	git(work, "commit", "-q", "-m", "first")
	git(root, "clone", "-q", "--bare", work, filepath.Join(root, "repo.git"))
	srv := httptest.NewServer(&cgi.Handler{Path: backend, Root: "/git", Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}})
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	for _, transport := range []string{"socket", "channel"} {
		t.Run(transport, func(t *testing.T) {
			n := startNet(t, "", func(c *sandbox.Config) { c.ProxyOverChannel = transport == "channel" })
			res := sandboxtest.Exec(t, n.s, "git clone -q http://allowed.test:"+port+"/git/repo.git /tmp/r 2>&1 && cat /tmp/r/README; "+
				"git ls-remote http://refused.test:"+port+"/git/repo.git 2>&1 | head -3", 60*time.Second)
			out := string(res.Output)
			if !strings.Contains(out, "through-the-proxy") || !strings.Contains(out, "403") {
				t.Errorf("git through the proxy:\n%s", out)
			}
		})
	}
}
