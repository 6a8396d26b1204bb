package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/sandbox"
)

// tree creates files (content = path), directories (trailing /) and links
// ("name -> target") under a new temporary directory.
func tree(t testing.TB, entries ...string) string {
	ws := t.TempDir()
	for _, e := range entries {
		if name, target, ok := strings.Cut(e, " -> "); ok {
			mustDo(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755))
			mustDo(t, os.Symlink(target, filepath.Join(ws, name)))
			continue
		}
		p := filepath.Join(ws, e)
		if strings.HasSuffix(e, "/") {
			mustDo(t, os.MkdirAll(p, 0o755))
			continue
		}
		mustDo(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mustDo(t, os.WriteFile(p, []byte(e), 0o644))
	}
	return ws
}

func mustDo(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func describe(es []maskEntry) string {
	var out []string
	for _, e := range es {
		k := "ro"
		if e.kind == maskHidden {
			k = "hide"
		}
		if e.dir {
			k += "/"
		}
		out = append(out, e.rel+"="+k)
	}
	return strings.Join(out, " ")
}

var (
	testRead  = []string{"**/.env", "**/*.key", "secrets/**", "/etc/shadow"}
	testWrite = []string{".git/config", ".git/hooks/**", "**/.envrc", "agentbox.yaml"}
)

func TestPlanMasks(t *testing.T) {
	outside := t.TempDir()
	mustDo(t, os.WriteFile(filepath.Join(outside, ".env"), []byte("host"), 0o644))
	cases := []struct {
		name    string
		entries []string
		want    string
	}{
		{"nothing", []string{"a.txt", "src/main.go"}, ""},
		{"files", []string{".env", "a/b/.env", "a/id.key", ".git/config", ".git/HEAD", "agentbox.yaml", "x/.envrc"},
			".env=hide .git/config=ro a/b/.env=hide a/id.key=hide agentbox.yaml=ro x/.envrc=ro"},
		{"directories whole", []string{"secrets/a", "secrets/deep/b", "certs.key/c", ".git/hooks/pre-commit", ".git/hooks/x.key"},
			".git/hooks=ro/ .git/hooks/x.key=hide certs.key=hide/ secrets=hide/"},
		{"link inside protects its target", []string{"real/cfg", ".env -> real/cfg", "abs.key -> /workspace/real2/k", "real2/k"},
			"real/cfg=hide real2/k=hide"},
		{"link chain", []string{"c", "b -> c", "a.key -> b"}, "c=hide"},
		{"link out of the workspace protects nothing", []string{".env -> " + outside + "/.env", "up.key -> ../../etc/passwd", "dangling.key -> nope"}, ""},
		{"link loop", []string{"l1.key -> l2", "l2 -> l1.key"}, ""},
		{"directory link is not walked", []string{"d -> " + outside}, ""},
		{"literal under a link parent", []string{"real/config", ".git -> real"}, ""},
		{"link to a directory", []string{"vault/x", "secrets -> vault"}, "vault=hide/"},
		{"root link", []string{"root.key -> ."}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ws := tree(t, c.entries...)
			got, err := planMasks(context.Background(), ws, testRead, testWrite, true)
			if err != nil {
				t.Fatal(err)
			}
			if d := describe(got); d != c.want {
				t.Errorf("got  %q\nwant %q", d, c.want)
			}
		})
	}
}

func TestPlanMasksBound(t *testing.T) {
	var entries []string
	for i := range MaxFileMasks + 1 {
		entries = append(entries, fmt.Sprintf("certs/c%03d.key", i))
	}
	ws := tree(t, entries...)
	_, err := planMasks(context.Background(), ws, testRead, testWrite, true)
	if !errors.Is(err, sandbox.ErrConfig) || !strings.Contains(err.Error(), `files.read.deny[1] "**/*.key" matches 257`) {
		t.Fatalf("want a configuration error naming the rule and the count, got %v", err)
	}
	// A directory rule covers them all with one mount.
	got, err := planMasks(context.Background(), ws, []string{"certs/**", "**/*.key"}, nil, true)
	if err != nil || describe(got) != "certs=hide/" {
		t.Fatalf("got %q, %v", describe(got), err)
	}
}

func TestPlanMasksRefusesUnprintableNames(t *testing.T) {
	ws := tree(t, "a\x01b.key")
	if _, err := planMasks(context.Background(), ws, testRead, nil, true); !errors.Is(err, sandbox.ErrConfig) {
		t.Fatalf("want a configuration error, got %v", err)
	}
}

func TestPlanMasksUnreadable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	ws := tree(t, "locked/.env")
	mustDo(t, os.Chmod(filepath.Join(ws, "locked"), 0))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(ws, "locked"), 0o755) })
	if _, err := planMasks(context.Background(), ws, testRead, nil, false); err != nil {
		t.Fatalf("same user: unreadable is skipped, got %v", err)
	}
	if _, err := planMasks(context.Background(), ws, testRead, nil, true); !errors.Is(err, sandbox.ErrConfig) {
		t.Fatalf("another sandbox user: want a refusal, got %v", err)
	}
}

// BenchmarkPlanMasks60k walks a 60,000-file workspace with the default
// policy's deny globs (every read glob starts with "**": a full walk).
func BenchmarkPlanMasks60k(b *testing.B) {
	ws := b.TempDir()
	for d := range 600 {
		dir := filepath.Join(ws, fmt.Sprintf("pkg%03d/sub", d))
		mustDo(b, os.MkdirAll(dir, 0o755))
		for f := range 100 {
			mustDo(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.go", f)), nil, 0o644))
		}
	}
	mustDo(b, os.WriteFile(filepath.Join(ws, ".env"), nil, 0o644))
	read := []string{"**/.env", "**/.env.*", "**/*.pem", "**/*.key", "**/id_rsa*", "**/id_ecdsa*", "**/id_ed25519*", "**/.netrc", "**/.npmrc", "**/.pypirc", "**/.git-credentials"}
	write := []string{".git/hooks/**", ".git/config", "**/.envrc", "**/.env", "**/.env.*", "agentbox.yaml"}
	b.ResetTimer()
	for range b.N {
		got, err := planMasks(context.Background(), ws, read, write, true)
		if err != nil || len(got) != 1 {
			b.Fatalf("%v %v", describe(got), err)
		}
	}
}
