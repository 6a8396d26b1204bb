package executor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// denySecret is a stand-in for the policy's matcher: secret/ is denied.
func denySecret(allow, deny []string, rel string, write bool) (bool, string) {
	if rel == "secret" || strings.HasPrefix(rel, "secret/") {
		return true, "files.deny[0]"
	}
	return false, ""
}

var rules = &wire.Rules{Allow: []string{"**"}, Deny: []string{"secret/**"}}

// tree makes a workspace in a temp directory: ws/a.txt, ws/sub/b.txt,
// ws/secret/key, links in and out, a hard link, a fifo; and a file outside.
func tree(t *testing.T) (*Server, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(base, "ws")
	for name, body := range map[string]string{"a.txt": "alpha\n", "sub/b.txt": "beta\n", "secret/key": "k3y\n", "shared.txt": "shared\n"} {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	outside := filepath.Join(base, "outside.txt")
	if err := os.WriteFile(outside, []byte("host secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("sub/b.txt", filepath.Join(ws, "link-in")))
	must(os.Symlink(outside, filepath.Join(ws, "link-out")))
	must(os.Symlink("../outside.txt", filepath.Join(ws, "link-up")))
	must(os.Symlink("secret/key", filepath.Join(ws, "link-secret")))
	must(os.Symlink("secret", filepath.Join(ws, "dir-secret")))
	must(os.Symlink(base, filepath.Join(ws, "dir-out")))
	must(os.Link(filepath.Join(ws, "secret", "key"), filepath.Join(ws, "hard")))
	must(syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o600))
	return &Server{Root: ws, Match: denySecret}, ws
}

func TestReadFile(t *testing.T) {
	s, ws := tree(t)
	for _, c := range []struct {
		name, path string
		rules      *wire.Rules
		want       string // content, or the error must contain it
		resolved   string
		denied     bool
		isErr      bool
	}{
		{name: "plain", path: "a.txt", want: "alpha\n", resolved: "a.txt"},
		{name: "absolute below root", path: ws + "/sub/b.txt", want: "beta\n", resolved: "sub/b.txt"},
		{name: "cleaned", path: "sub/../a.txt", want: "alpha\n", resolved: "a.txt"},
		{name: "symlink inside", path: "link-in", want: "beta\n", resolved: "sub/b.txt"},
		{name: "symlink to an absolute path outside", path: "link-out", isErr: true, want: "outside"},
		{name: "symlink up and out", path: "link-up", isErr: true, want: "outside"},
		{name: "dotdot", path: "../outside.txt", isErr: true, want: "outside"},
		{name: "absolute outside", path: "/etc/passwd", isErr: true, want: "outside"},
		{name: "directory symlink out", path: "dir-out/outside.txt", isErr: true, want: "outside"},
		{name: "denied directly", path: "secret/key", rules: rules, denied: true, resolved: "secret/key"},
		{name: "denied through a symlink", path: "link-secret", rules: rules, denied: true, resolved: "secret/key"},
		{name: "denied through a directory symlink", path: "dir-secret/key", rules: rules, denied: true, resolved: "secret/key"},
		{name: "hard link to a denied file", path: "hard", rules: rules, isErr: true, want: "hard-linked"},
		{name: "hard link without deny rules", path: "hard", want: "k3y\n", resolved: "hard"},
		{name: "fifo does not block", path: "fifo", isErr: true, want: "not a regular file (fifo)"},
		{name: "directory", path: "sub", isErr: true, want: "not a regular file (directory)"},
		{name: "missing", path: "nope.txt", isErr: true, want: "no such file"},
		{name: "empty path", path: "", isErr: true, want: "empty path"},
		{name: "NUL", path: "a\x00b", isErr: true, want: "NUL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := s.readFile(&wire.Request{Op: wire.OpRead, Path: []byte(c.path), Rules: c.rules})
			switch {
			case c.denied:
				if !r.Denied || string(r.Resolved) != c.resolved || len(r.Content) != 0 {
					t.Fatalf("want denied at %s, got %+v", c.resolved, r)
				}
			case c.isErr:
				if r.Error == "" || !strings.Contains(r.Error, c.want) || len(r.Content) != 0 {
					t.Fatalf("want an error containing %q, got %+v", c.want, r)
				}
			default:
				if r.Error != "" || string(r.Content) != c.want || string(r.Resolved) != c.resolved {
					t.Fatalf("want %q at %s, got error %q content %q resolved %q", c.want, c.resolved, r.Error, r.Content, r.Resolved)
				}
			}
		})
	}
}

func TestReadFileRange(t *testing.T) {
	s, _ := tree(t)
	r := s.readFile(&wire.Request{Op: wire.OpRead, Path: []byte("a.txt"), Offset: 1, Limit: 3})
	if r.Error != "" || string(r.Content) != "lph" || r.Size != 6 {
		t.Fatalf("got %+v", r)
	}
	if r := s.readFile(&wire.Request{Op: wire.OpRead, Path: []byte("a.txt"), Offset: -1, Limit: 3}); r.Error == "" {
		t.Fatal("a negative offset was accepted")
	}
}

func TestWriteFile(t *testing.T) {
	for _, c := range []struct {
		name, path   string
		rules        *wire.Rules
		want         string // error substring; "" = success
		denied       bool
		resolved     string
		mustNotExist string // relative to the workspace's parent
	}{
		{name: "new file", path: "new.txt", resolved: "new.txt"},
		{name: "new directories", path: "x/y/z.txt", resolved: "x/y/z.txt"},
		{name: "absolute below root", path: "@/abs.txt", resolved: "abs.txt"},
		{name: "replace keeps going", path: "a.txt", resolved: "a.txt"},
		{name: "the root itself", path: ".", want: "workspace directory"},
		{name: "dotdot", path: "../escape.txt", want: "outside", mustNotExist: "escape.txt"},
		{name: "through a file symlink", path: "link-in", want: "symlink"},
		{name: "through a symlink out", path: "link-out", want: "symlink"},
		{name: "through a directory symlink out", path: "dir-out/escape.txt", want: "outside", mustNotExist: "escape.txt"},
		{name: "denied directly", path: "secret/new", rules: rules, denied: true, resolved: "secret/new", mustNotExist: "ws/secret/new"},
		{name: "denied through a directory symlink", path: "dir-secret/new", rules: rules, denied: true, resolved: "secret/new", mustNotExist: "ws/secret/new"},
		{name: "denied ancestor: nothing is created", path: "dir-secret/d1/d2/f", rules: rules, denied: true, resolved: "secret/d1/d2/f", mustNotExist: "ws/secret/d1"},
		{name: "hard link", path: "hard", want: "hard-linked"},
		{name: "fifo", path: "fifo", want: "not a regular file"},
		{name: "directory", path: "sub", want: "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ws := tree(t)
			p := strings.Replace(c.path, "@", ws, 1)
			content := "written by " + c.name + "\n"
			r := s.writeFile(&wire.Request{Op: wire.OpWrite, Path: []byte(p), Content: []byte(content), Rules: c.rules, Write: true})
			switch {
			case c.denied:
				if !r.Denied || string(r.Resolved) != c.resolved {
					t.Fatalf("want denied at %s, got %+v", c.resolved, r)
				}
			case c.want != "":
				if !strings.Contains(r.Error, c.want) {
					t.Fatalf("want an error containing %q, got %+v", c.want, r)
				}
			default:
				if r.Error != "" || string(r.Resolved) != c.resolved || r.Size != int64(len(content)) {
					t.Fatalf("got %+v", r)
				}
				if b, err := os.ReadFile(filepath.Join(ws, c.resolved)); err != nil || string(b) != content {
					t.Fatalf("file holds %q (%v)", b, err)
				}
			}
			if c.mustNotExist != "" {
				if _, err := os.Lstat(filepath.Join(filepath.Dir(ws), c.mustNotExist)); err == nil {
					t.Fatalf("%s was created", c.mustNotExist)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(filepath.Dir(ws), "outside.txt")); string(b) != "host secret\n" {
				t.Fatalf("the file outside the workspace changed: %q", b)
			}
			left, _ := filepath.Glob(filepath.Join(ws, "*", ".agentbox-tmp-*"))
			top, _ := filepath.Glob(filepath.Join(ws, ".agentbox-tmp-*"))
			if len(left)+len(top) > 0 {
				t.Fatalf("temporary files left behind: %v %v", left, top)
			}
		})
	}
}

func TestWriteFileKeepsMode(t *testing.T) {
	s, ws := tree(t)
	if r := s.writeFile(&wire.Request{Op: wire.OpWrite, Path: []byte("a.txt"), Content: []byte("new\n"), Write: true}); r.Error != "" {
		t.Fatal(r.Error)
	}
	fi, err := os.Stat(filepath.Join(ws, "a.txt"))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode after replace: %v %v", fi.Mode(), err)
	}
}
