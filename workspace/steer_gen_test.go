package workspace

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// Generative: random trees of links, directories and files, changed
// through a real overlay over several calls (links re-pointed, entries
// replaced between calls) and promoted after each. After every promotion
// nothing in the workspace resolves outside it, and a sentinel tree
// beside the workspace is byte-identical. Seeded and bounded; seeds that
// found bugs stay in the list.
func TestGenerativePromotionStaysInside(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay needs root")
	}
	seeds := []int64{} // seeds that found bugs go here
	n := int64(12)
	if v, err := strconv.ParseInt(os.Getenv("AGENTBOX_GEN_SEEDS"), 10, 64); err == nil {
		n = v // a longer exploration
	}
	for i := int64(1); i <= n; i++ {
		seeds = append(seeds, i)
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { genPromote(t, seed) })
	}
}

func genPromote(t *testing.T, seed int64) {
	r := rand.New(rand.NewSource(seed))
	base := t.TempDir()
	sentinel := filepath.Join(base, "outside")
	put(t, sentinel, "s", "sentinel")
	put(t, sentinel, "d/f", "deep")
	lower, upper, state := stageDirs(t, map[string]string{
		".git/HEAD": "ref: refs/heads/main\n", ".git/objects/.keep": "", ".git/refs/heads/main": "0\n",
		".git/logs/HEAD": "", "a/f": "f", "a/b/g": "g", "c/h": "h",
	})
	if err := os.Symlink("a", filepath.Join(lower, "ul")); err != nil { // the user's own link, inside
		t.Fatal(err)
	}
	if err := os.Symlink(sentinel, filepath.Join(lower, "uo")); err != nil { // and one out
		t.Fatal(err)
	}
	want := treeContent(t, sentinel)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a", "b", "c", "l1", "l2", "ul", ".git", "logs", "HEAD", "refs", "uo"}
	randPath := func() string {
		n := 1 + r.Intn(3)
		var p []string
		for i := 0; i < n; i++ {
			p = append(p, names[r.Intn(len(names))])
		}
		return strings.Join(p, "/")
	}
	randTarget := func() string {
		switch r.Intn(6) {
		case 0:
			return []string{"/etc", sentinel, sentinel + "/s", "/"}[r.Intn(4)]
		case 1:
			return "../outside/s"
		}
		var p []string
		for i := r.Intn(4); i > 0; i-- {
			p = append(p, "..")
		}
		for i := r.Intn(4); i > 0; i-- {
			p = append(p, []string{"a", "b", "l1", "l2", "ul", ".", "..", "outside", "s", ".git", "logs", "uo", "d"}[r.Intn(13)])
		}
		if len(p) == 0 {
			return "."
		}
		return strings.Join(p, "/")
	}
	for call := 1; call <= 5; call++ {
		merged := mountGen(t, lower, upper, t.TempDir(), call)
		// The sandbox's own operations resolve in its root, as in a
		// container (an absolute link leads to the view's top).
		sb := &genSandbox{t: t, root: merged}
		for op := 0; op < 12; op++ {
			p := randPath()
			switch r.Intn(6) {
			case 0:
				sb.mkdirAll(p)
			case 1:
				sb.mkdirAll(filepath.Dir(p))
				sb.do(p, func(d int, n string) error {
					fd, err := unix.Openat2(d, n, &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_TRUNC | unix.O_CLOEXEC, Mode: 0o755, Resolve: unix.RESOLVE_IN_ROOT})
					if err == nil {
						_, err = unix.Write(fd, []byte(fmt.Sprint("call ", call)))
						unix.Close(fd)
					}
					return err
				})
			case 2, 3:
				sb.mkdirAll(filepath.Dir(p))
				sb.removeAll(p)
				tgt := randTarget()
				sb.do(p, func(d int, n string) error { return unix.Symlinkat(tgt, d, n) })
			case 4:
				sb.removeAll(p)
			case 5:
				q := randPath()
				sb.do(p, func(d int, n string) error {
					pd, qn, err := sb.parent(q)
					if err != nil {
						return err
					}
					defer unix.Close(pd)
					return unix.Renameat(d, n, pd, qn)
				})
			}
		}
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
		cp, err := s.Promote(fmt.Sprint("call-", call))
		if err != nil {
			t.Fatalf("seed %d call %d: %v", seed, call, err)
		}
		if cp != nil && os.Getenv("GEN_DEBUG") != "" {
			for _, c := range cp.Changes {
				t.Logf("call %d: %s %s %s %q held=%s %s", call, c.Path, c.Change, c.Type, c.target, c.Held, c.Why)
			}
		}
		assertInside(t, lower, map[string]bool{"uo": true})
		if got := treeContent(t, sentinel); !equalMaps(got, want) {
			t.Fatalf("seed %d call %d: the sentinel tree changed: %v", seed, call, got)
		}
		if t.Failed() {
			t.Fatalf("seed %d call %d", seed, call)
		}
	}
}

// mountGen mounts a fresh overlay view for one call (the previous one's
// cached lookups go with it, as a sandbox's next call would not have
// them after its held entries were scrubbed).
func mountGen(t *testing.T, lower, upper, base string, call int) string {
	t.Helper()
	work, merged := filepath.Join(base, fmt.Sprint("work", call)), filepath.Join(base, fmt.Sprint("merged", call))
	for _, d := range []string{work, merged} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work + ",userxattr,redirect_dir=nofollow,metacopy=off,index=off"
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Skipf("no kernel overlay here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(merged, unix.MNT_DETACH) })
	return merged
}

// genSandbox does a sandbox's file operations below root, resolving every
// path as the kernel does in a container whose root is root.
type genSandbox struct {
	t    *testing.T
	root string
}

func (g *genSandbox) parent(rel string) (int, string, error) {
	rfd, err := unix.Open(g.root, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", err
	}
	defer unix.Close(rfd)
	d, n := filepath.Split(rel)
	if d == "" {
		d = "."
	}
	fd, err := unix.Openat2(rfd, d, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_IN_ROOT})
	return fd, n, err
}

func (g *genSandbox) do(rel string, fn func(dirfd int, name string) error) {
	d, n, err := g.parent(rel)
	if err != nil {
		return
	}
	defer unix.Close(d)
	_ = fn(d, n)
}

func (g *genSandbox) mkdirAll(rel string) {
	if rel == "." || rel == "" {
		return
	}
	g.mkdirAll(filepath.Dir(rel))
	g.do(rel, func(d int, n string) error { return unix.Mkdirat(d, n, 0o755) })
}

func (g *genSandbox) removeAll(rel string) {
	g.do(rel, func(d int, n string) error { return fstree.RemoveAll(d, n) })
}
