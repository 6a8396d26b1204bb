package fstree

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func mkTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, p := range []string{"a/b/c.txt", "a/d.txt", "e.txt", "f/g/h/i.txt"} {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func collect(t *testing.T, root string, o Options) ([]string, Result) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	res, err := Walk(root, o, func(e *Entry) bool {
		mu.Lock()
		got = append(got, e.Rel)
		mu.Unlock()
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, res
}

func TestWalkSortedNoFollow(t *testing.T) {
	dir := mkTree(t)
	got, res := collect(t, dir, Options{Sorted: true})
	want := []string{"a", "a/b", "a/b/c.txt", "a/d.txt", "e.txt", "f", "f/g", "f/g/h", "f/g/h/i.txt", "link"}
	if !slices.Equal(got, want) || res.Incomplete != "" || res.Entries != len(want) {
		t.Fatalf("got %v (%+v), want %v", got, res, want)
	}
	par, res := collect(t, dir, Options{Parallel: 4})
	slices.Sort(par)
	if !slices.Equal(par, want) || res.Incomplete != "" {
		t.Fatalf("parallel: got %v (%+v)", par, res)
	}
	// A root that is a symlink is not followed either.
	if _, err := Walk(filepath.Join(dir, "link"), Options{}, func(*Entry) bool { return true }); err == nil {
		t.Fatal("walked through a symlinked root")
	}
}

func TestWalkBoundsAreReported(t *testing.T) {
	dir := mkTree(t)
	_, res := collect(t, dir, Options{MaxEntries: 3})
	if res.Entries != 3 || !strings.Contains(res.Incomplete, "more than 3 entries") {
		t.Fatalf("entries bound: %+v", res)
	}
	got, res := collect(t, dir, Options{MaxDepth: 2, Sorted: true})
	if !strings.Contains(res.Incomplete, "deeper than 2") || slices.Contains(got, "a/b/c.txt") {
		t.Fatalf("depth bound: %v %+v", got, res)
	}
}

// A chain deeper than any fixed limit of old (512) is walked to its end.
func TestWalkDeepChain(t *testing.T) {
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	const depth = 700
	for i := 0; i < depth; i++ {
		if err := unix.Mkdirat(fd, "d", 0o755); err != nil {
			t.Fatal(err)
		}
		nfd, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = nfd
	}
	if err := unix.Mknodat(fd, "planted", unix.S_IFREG|0o644, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	deepest := 0
	res, err := Walk(dir, Options{}, func(e *Entry) bool {
		if e.Name == "planted" {
			deepest = e.Depth
		}
		return true
	})
	if err != nil || res.Incomplete != "" || deepest != depth+1 {
		t.Fatalf("deep chain: deepest %d, %+v, %v", deepest, res, err)
	}
	fd, _ = unix.Open(filepath.Dir(dir), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	defer unix.Close(fd)
	if err := RemoveAll(fd, filepath.Base(dir)); err != nil {
		t.Fatal(err)
	}
}

func TestUnreadableDirIsIncomplete(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads every directory")
	}
	dir := mkTree(t)
	if err := os.Chmod(filepath.Join(dir, "a"), 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Join(dir, "a"), 0o755)
	_, res := collect(t, dir, Options{})
	if !strings.Contains(res.Incomplete, "a could not be read") {
		t.Fatalf("%+v", res)
	}
}

func TestChangedCountsCtime(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := Lstat(unix.AT_FDCWD, p)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite the content with the same size and put the mtime back: only
	// the ctime tells.
	fi, _ := os.Stat(p)
	for i := 0; ; i++ {
		if err := os.WriteFile(p, []byte("two"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
		b, _ := Lstat(unix.AT_FDCWD, p)
		if b.CTime != a.CTime {
			if b.MTime != a.MTime || b.Size != a.Size || !Changed(a, b) {
				t.Fatalf("a %+v b %+v", a, b)
			}
			break
		}
		if i > 1e6 {
			t.Fatal("the ctime never moved")
		}
	}
	if Changed(a, a) {
		t.Fatal("an entry changed from itself")
	}
	before, _ := Lstat(unix.AT_FDCWD, p)
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	c, _ := Lstat(unix.AT_FDCWD, p)
	if !ModeOnly(before, c) || ModeOnly(before, before) || !Changed(before, c) {
		t.Fatal("mode-only change not recognised")
	}
	// A directory whose entries changed did not change itself.
	da, _ := Lstat(unix.AT_FDCWD, dir)
	_ = os.WriteFile(filepath.Join(dir, "new"), nil, 0o644)
	db, _ := Lstat(unix.AT_FDCWD, dir)
	if Changed(da, db) {
		t.Fatal("a directory changed with its entries")
	}
}

// TestDirRemovedAfterOpenIsGone: a directory removed between its open and
// its listing (a kept process in the sandbox, CI's TestSteerBackgroundRepoint)
// is gone, like an entry gone before its lstat: the walk is not incomplete.
func TestDirRemovedAfterOpenIsGone(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sd2")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	w := &walker{fn: func(*Entry) bool { return true }}
	w.dir(fd, "sd2", 1)
	if w.incomplete != "" {
		t.Fatalf("a removed directory made the walk incomplete: %s", w.incomplete)
	}
	if _, err := readNames(fd, nil); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("listing a removed directory: %v, want ENOENT (the case this test covers)", err)
	}
}

// TestDirSwappedBeforeOpenIsGone: a directory the walk visited, replaced
// by a file, a link or a FIFO before the walk opens it (a kept process in
// the sandbox), is gone as a directory: the walk is not incomplete, and
// nothing below the new entry is visited.
func TestDirSwappedBeforeOpenIsGone(t *testing.T) {
	for _, kind := range []string{"file", "link", "fifo"} {
		root := t.TempDir()
		d := filepath.Join(root, "d")
		if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		var below []string
		res, err := Walk(root, Options{}, func(e *Entry) bool {
			if strings.HasPrefix(e.Rel, "d/") {
				below = append(below, e.Rel)
			}
			if e.Rel != "d" {
				return true
			}
			if err := os.RemoveAll(d); err != nil {
				t.Fatal(err)
			}
			var err error
			switch kind {
			case "file":
				err = os.WriteFile(d, []byte("x"), 0o644)
			case "link":
				err = os.Symlink(".", d)
			case "fifo":
				err = unix.Mkfifo(d, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			return true
		})
		if err != nil || res.Incomplete != "" || len(below) != 0 {
			t.Errorf("%s: err %v, incomplete %q, visited below %v; want a complete walk with nothing below d", kind, err, res.Incomplete, below)
		}
	}
}
