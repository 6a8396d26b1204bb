package docker_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil"
	"github.com/agentbox/agentbox/sandbox"
	"github.com/agentbox/agentbox/sandbox/sandboxtest"
)

// The default policy's deny lists (policy.example.yaml) plus a directory.
var (
	readDeny  = []string{"**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/id_rsa*", "**/.netrc", "vault/**"}
	writeDeny = []string{".git/hooks/**", ".git/config", "**/.envrc", "**/.env", "**/.env.*", "agentbox.yaml"}
)

const secret = "s3cr3t-7f1d2a"

// protectedWorkspace has secrets behind read rules and files behind write
// rules; the uid owns it (when run as root).
func protectedWorkspace(t *testing.T, uid int) (string, map[string]string) {
	ws := t.TempDir()
	files := map[string]string{
		".env":                  secret + "-env",
		"sub/deep/.env.local":   secret + "-local",
		"certs/server.pem":      secret + "-pem",
		"vault/a/b.txt":         secret + "-vault",
		".git/config":           "[core]\n\tbare = false\n",
		".git/hooks/pre-commit": "#!/bin/sh\n",
		"agentbox.yaml":         "commands: {}\n",
		"tools/.envrc":          "export A=1\n",
		"README.md":             "hello\n",
	}
	for p, c := range files {
		full := filepath.Join(ws, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("certs/server.pem", filepath.Join(ws, "link.key")); err != nil {
		t.Fatal(err)
	}
	if uid > 0 && os.Geteuid() == 0 {
		_ = filepath.WalkDir(ws, func(p string, _ fs.DirEntry, _ error) error { return os.Lchown(p, uid, uid) })
	}
	return ws, files
}

// attackScript tries every way an interpreter has to read a masked file or
// change a protected one, and prints what it got.
const attackScript = `
import os, mmap, shutil
out = []
for p in [".env", "sub/deep/.env.local", "certs/server.pem", "vault/a/b.txt", "link.key", "/proc/self/cwd/.env", "/workspace/./sub/../.env"]:
    try: out.append("read %s: %r" % (p, open(p).read()))
    except Exception as e: out.append("read %s: %s" % (p, type(e).__name__))
try: out.append("listdir vault: %r" % os.listdir("vault"))
except Exception as e: out.append("listdir vault: %s" % type(e).__name__)
try:
    os.link(".env", "hard"); out.append("hardlink: " + open("hard").read())
except Exception as e: out.append("hardlink: %s" % type(e).__name__)
for p in [".git/config", ".git/hooks/pre-commit", "agentbox.yaml", "tools/.envrc", ".env"]:
    for op in ["write", "append", "unlink", "rename-over", "rename-away", "truncate", "chmod"]:
        try:
            if op == "write": open(p, "w").write("pwned")
            if op == "append": open(p, "a").write("pwned")
            if op == "unlink": os.unlink(p)
            if op == "rename-over":
                open("evil", "w").write("pwned"); os.rename("evil", p)
            if op == "rename-away": os.rename(p, p + ".moved")
            if op == "truncate": os.truncate(p, 0)
            if op == "chmod": os.chmod(p, 0o777)
            out.append("%s %s: DONE" % (op, p))
        except Exception as e: out.append("%s %s: %s" % (op, p, type(e).__name__))
try: open(".git/hooks/post-checkout", "w").write("pwned"); out.append("new hook: DONE")
except Exception as e: out.append("new hook: %s" % type(e).__name__)
print("\n".join(out))
`

func TestFileRulesByTheKernel(t *testing.T) {
	for _, rt := range []string{"", "runsc"} {
		t.Run("runtime="+rt, func(t *testing.T) {
			for _, uid := range []int{0, 1000} {
				t.Run(fmt.Sprintf("uid=%d", uid), func(t *testing.T) {
					if uid == 0 && os.Geteuid() != 0 {
						t.Skip("needs root")
					}
					ws, files := protectedWorkspace(t, uid)
					if err := os.WriteFile(filepath.Join(ws, "attack.py"), []byte(attackScript), 0o644); err != nil {
						t.Fatal(err)
					}
					cfg := testutil.Config(t, ws)
					cfg.Runtime, cfg.ReadDeny, cfg.WriteDeny = rt, readDeny, writeDeny
					s, err := testutil.Runtime(t).Start(context.Background(), cfg)
					if err != nil && rt == "runsc" && strings.Contains(err.Error(), "child subreaper") {
						t.Skipf("the executor cannot start under runsc (known, executor's side: %v)", err)
					}
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = s.Close(context.Background()) })
					if s.Info().Masked == 0 {
						t.Errorf("no masks recorded in the session info")
					}
					res := sandboxtest.Exec(t, s, "python3 attack.py; cat .env vault/a/b.txt link.key 2>&1; grep -r s3cr3t . 2>&1; tar cf - . 2>/dev/null | grep -ac s3cr3t", 60*time.Second)
					out := string(res.Output)
					if strings.Contains(out, secret) {
						t.Errorf("a masked secret appeared in the output:\n%s", out)
					}
					if strings.Contains(out, ": DONE") {
						t.Errorf("a protected file was changed:\n%s", out)
					}
					if !strings.Contains(out, "read .env: ''") {
						t.Errorf("want the masked file to read empty:\n%s", out)
					}
					for p, want := range files {
						got, err := os.ReadFile(filepath.Join(ws, p))
						if err != nil || string(got) != want {
							t.Errorf("host file %s changed: %q, %v", p, got, err)
						}
					}
					if _, err := os.Lstat(filepath.Join(ws, ".git/hooks/post-checkout")); err == nil {
						t.Errorf("a hook was created")
					}
				})
			}
		})
	}
}

func TestFileRulesMountsAreReadOnly(t *testing.T) {
	ws, _ := protectedWorkspace(t, 1000)
	cfg := testutil.Config(t, ws)
	cfg.ReadDeny, cfg.WriteDeny = readDeny, writeDeny
	s := testutil.StartWith(t, cfg)
	res := sandboxtest.Exec(t, s, `awk '$5 ~ /^\/workspace\// {split($6, o, ","); print $5, o[1]}' /proc/self/mountinfo | sort`, 10*time.Second)
	want := "/workspace/.env ro\n/workspace/.git/config ro\n/workspace/.git/hooks ro\n/workspace/agentbox.yaml ro\n/workspace/certs/server.pem ro\n/workspace/sub/deep/.env.local ro\n/workspace/tools/.envrc ro\n/workspace/vault ro"
	if got := strings.TrimSpace(string(res.Output)); got != want {
		t.Errorf("mounts:\n%s\nwant\n%s", got, want)
	}
}

func TestFileRulesTooManyRefuses(t *testing.T) {
	cli := testutil.RequireDocker(t)
	ws := t.TempDir()
	for i := range 300 {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("k%03d.key", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := testutil.Config(t, ws)
	cfg.ReadDeny = readDeny
	cfg.SessionID = sandbox.NewID()
	_, err := testutil.Runtime(t).Start(context.Background(), cfg)
	if !errors.Is(err, sandbox.ErrConfig) || !strings.Contains(err.Error(), `files.read.deny[3] "**/*.key" matches 300`) {
		t.Fatalf("want a configuration error naming the rule and the count, got %v", err)
	}
	if left := testutil.Leftovers(t, cli, cfg.SessionID); len(left) != 0 {
		t.Errorf("containers left behind: %v", left)
	}
	if m, _ := filepath.Glob(filepath.Join(os.TempDir(), "agentbox-masks-"+cfg.SessionID[:12]+"-*")); len(m) != 0 {
		t.Errorf("mask directories left behind: %v", m)
	}
}

// setIDScript tries every way to leave a set-id file in the workspace.
const setIDScript = `
cp /bin/bash tool; chmod 4755 tool; chmod u+s tool; chmod g+s tool; chmod +s tool
cp /bin/bash tool2; chmod 6755 tool2
install -m 4755 /bin/true inst; install -m 2755 /bin/true inst2
python3 - <<'PY'
import os
def t(name, f):
    try: f(); print(name, "DONE")
    except Exception as e: print(name, type(e).__name__)
t("os.chmod", lambda: os.chmod("tool", 0o4755))
t("os.chmod g", lambda: os.chmod("tool", 0o2711))
t("fchmod", lambda: os.fchmod(os.open("tool", os.O_RDONLY), 0o4755))
t("chmod at", lambda: os.chmod("tool", 0o4755, dir_fd=os.open(".", os.O_RDONLY)))
t("open creat", lambda: os.open("c1", os.O_CREAT | os.O_WRONLY, 0o4755))
t("open creat g", lambda: os.open("c2", os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o2755))
t("mknod", lambda: os.mknod("m1", 0o4644))
t("mknod fifo", lambda: os.mknod("m2", 0o4644 | 0o010000))
PY
mkdir -m 2755 sgid-dir; mknod -m 4755 fifo p
ls -l
`

func TestNoSetIDFile(t *testing.T) {
	for _, uid := range []int{0, 1000} {
		t.Run(fmt.Sprintf("uid=%d", uid), func(t *testing.T) {
			if uid == 0 && os.Geteuid() != 0 {
				t.Skip("needs root")
			}
			ws, _ := protectedWorkspace(t, uid)
			s := testutil.StartWith(t, testutil.Config(t, ws))
			res := sandboxtest.Exec(t, s, setIDScript, 60*time.Second)
			if strings.Contains(string(res.Output), "DONE") {
				t.Errorf("a set-id call succeeded:\n%s", res.Output)
			}
			n := 0
			_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.Type()&fs.ModeSymlink != 0 {
					return nil
				}
				fi, err := os.Lstat(p)
				if err == nil && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 && !fi.IsDir() {
					t.Errorf("set-id file on the host: %s %v", p, fi.Mode())
				}
				n++
				return nil
			})
			if n < 5 {
				t.Errorf("the script created nothing (%d entries); output:\n%s", n, res.Output)
			}
			// Ordinary modes still work.
			res = sandboxtest.Exec(t, s, "touch plain && chmod 755 plain && python3 -c 'import os; os.open(\"p2\", os.O_CREAT|os.O_WRONLY, 0o644)' && ls -l plain p2", 10*time.Second)
			if res.ExitCode != 0 {
				t.Errorf("ordinary chmod/create failed: %s", res.Output)
			}
		})
	}
}

func TestDefaultUserIsTheWorkspaceOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ws, _ := protectedWorkspace(t, 1000)
	s := testutil.StartWith(t, testutil.Config(t, ws))
	if s.Info().User != "1000:1000" {
		t.Errorf("user %q, want the workspace owner 1000:1000", s.Info().User)
	}
	res := sandboxtest.Exec(t, s, "id -u; touch made", 10*time.Second)
	if strings.TrimSpace(string(res.Output)) != "1000" {
		t.Errorf("id -u: %s", res.Output)
	}
	fi, err := os.Stat(filepath.Join(ws, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != 1000 {
		t.Errorf("the file the sandbox made belongs to %+v, want uid 1000", fi.Sys())
	}
	root := testutil.StartWith(t, testutil.Config(t, t.TempDir()))
	if root.Info().User != "0:0" {
		t.Errorf("root's workspace: user %q, want 0:0", root.Info().User)
	}
}
