package transfer

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func write(t *testing.T, dir, rel, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func apply(t *testing.T, dir string, stream []byte, o ApplyOptions) (Report, error) {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	return Apply(root, bytes.NewReader(stream), o)
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The round trip: a tree goes in (read-denied paths left out), the
// sandbox side changes it in every way, and the changes come back into a
// copy of the original, with write-denied ones dropped.
func TestRoundTrip(t *testing.T) {
	host, box := t.TempDir(), t.TempDir()
	write(t, host, "keep.txt", "same\n", 0o644)
	write(t, host, "edit.txt", "old\n", 0o644)
	write(t, host, "gone.txt", "bye\n", 0o644)
	write(t, host, "mode.sh", "#!/bin/sh\n", 0o644)
	write(t, host, "dir/sub/a.txt", "a\n", 0o644)
	write(t, host, ".env", "SECRET=1\n", 0o600)
	write(t, host, ".git/config", "[core]\n", 0o644)
	if err := os.Symlink("keep.txt", filepath.Join(host, "link")); err != nil {
		t.Fatal(err)
	}
	deny := DenyMatcher([]string{".env"}, []string{".git/config", "keep.txt", "/etc/**"})
	var in bytes.Buffer
	st, err := PackTree(&in, host, DenyMatcher([]string{".env"}, nil), 0)
	if err != nil || st.Denied != 1 {
		t.Fatalf("pack: %+v %v", st, err)
	}
	// The sandbox side gets everything but the read-denied file.
	if _, err := apply(t, box, in.Bytes(), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(box, ".env")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf(".env was sent in: %v", err)
	}
	if l, _ := os.Readlink(filepath.Join(box, "link")); l != "keep.txt" || read(t, filepath.Join(box, "dir/sub/a.txt")) != "a\n" {
		t.Fatalf("tree not unpacked: link %q", l)
	}
	base, err := Snapshot(box, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Every kind of change.
	write(t, box, "edit.txt", "new\n", 0o644)
	write(t, box, "added/new.txt", "hello\n", 0o640)
	_ = os.Remove(filepath.Join(box, "gone.txt"))
	_ = os.Chmod(filepath.Join(box, "mode.sh"), 0o755)
	_ = os.RemoveAll(filepath.Join(box, "dir"))
	_ = os.Remove(filepath.Join(box, "link"))
	_ = os.Symlink("edit.txt", filepath.Join(box, "link"))
	write(t, box, ".git/config", "[core]\n\thooksPath = /tmp/evil\n", 0o644)
	write(t, box, ".env", "SECRET=stolen\n", 0o600)
	// Rewritten as it was (an effects check restored it): no alarm.
	write(t, box, "keep.txt", "x", 0o644)
	write(t, box, "keep.txt", "same\n", 0o644)
	write(t, box, "suid", "x", 0o755)
	_ = os.Chmod(filepath.Join(box, "suid"), 0o755|os.ModeSetuid)
	modeBefore, _ := os.Stat(filepath.Join(host, "mode.sh"))
	var out bytes.Buffer
	next, _, err := PackChanges(&out, box, base, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := apply(t, host, out.Bytes(), ApplyOptions{Deny: deny})
	if err != nil {
		t.Fatal(err)
	}
	if read(t, filepath.Join(host, "edit.txt")) != "new\n" || read(t, filepath.Join(host, "added/new.txt")) != "hello\n" {
		t.Fatal("edits not applied")
	}
	if _, err := os.Lstat(filepath.Join(host, "gone.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("deletion not applied")
	}
	if _, err := os.Lstat(filepath.Join(host, "dir")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("directory removal not applied")
	}
	if fi, _ := os.Stat(filepath.Join(host, "mode.sh")); fi.Mode().Perm() != 0o755 || !os.SameFile(fi, modeBefore) {
		t.Fatalf("mode change not applied in place: %v", fi.Mode())
	}
	if l, _ := os.Readlink(filepath.Join(host, "link")); l != "edit.txt" {
		t.Fatalf("symlink change not applied: %q", l)
	}
	if fi, _ := os.Stat(filepath.Join(host, "suid")); fi.Mode()&os.ModeSetuid != 0 {
		t.Fatal("set-uid bit carried back")
	}
	if read(t, filepath.Join(host, ".git/config")) != "[core]\n" || read(t, filepath.Join(host, ".env")) != "SECRET=1\n" {
		t.Fatal("a denied path was changed")
	}
	var whats []string
	for _, a := range rep.Alarms {
		whats = append(whats, a.Path+":"+a.What+":"+a.Action)
	}
	slices.Sort(whats)
	want := []string{".env:changed:dropped", ".git/config:changed:dropped", "suid:setid:cleared"}
	if !slices.Equal(whats, want) {
		t.Fatalf("alarms %v, want %v", whats, want)
	}
	// Nothing changed since: the next pack is empty.
	var again bytes.Buffer
	if _, st, err := PackChanges(&again, box, next, 0, 0); err != nil || st.Entries != 0 {
		t.Fatalf("second pack: %+v %v", st, err)
	}
}

func stream(t *testing.T, hdrs ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			_, _ = tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	_ = tw.Close()
	return b.Bytes()
}

// A hostile stream cannot write outside the root, through a symbolic link
// it planted, create device nodes, or exceed its bounds.
func TestHostileStreams(t *testing.T) {
	outside := t.TempDir()
	cases := []struct {
		name  string
		hdrs  []*tar.Header
		want  error
		alarm string
	}{
		{"dot-dot", []*tar.Header{{Name: "../escape", Typeflag: tar.TypeReg, Size: 1}}, ErrHostile, ""},
		{"absolute", []*tar.Header{{Name: "/etc/passwd", Typeflag: tar.TypeReg, Size: 1}}, ErrHostile, ""},
		{"unclean", []*tar.Header{{Name: "a/../../x", Typeflag: tar.TypeReg, Size: 1}}, ErrHostile, ""},
		{"through a planted symlink", []*tar.Header{
			{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: outside},
			{Name: "evil/owned", Typeflag: tar.TypeReg, Size: 1}}, ErrHostile, ""},
		{"delete through a symlink", []*tar.Header{
			{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: outside},
			{Name: "evil/keep", Typeflag: TypeDelete}}, ErrHostile, ""},
		{"device", []*tar.Header{{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}}, nil, "device"},
		{"hard link", []*tar.Header{{Name: "hl", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"}}, nil, "device"},
		{"too large", []*tar.Header{{Name: "big", Typeflag: tar.TypeReg, Size: 2048}}, ErrTooLarge, ""},
	}
	write(t, outside, "keep", "keep", 0o644)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			rep, err := apply(t, dir, stream(t, c.hdrs...), ApplyOptions{MaxBytes: 1024})
			if c.want != nil && !errors.Is(err, c.want) || c.want == nil && err != nil {
				t.Fatalf("err %v, want %v", err, c.want)
			}
			if c.alarm != "" && (len(rep.Alarms) != 1 || rep.Alarms[0].What != c.alarm) {
				t.Fatalf("alarms %+v, want %s", rep.Alarms, c.alarm)
			}
			ents, _ := os.ReadDir(outside)
			if len(ents) != 1 || read(t, filepath.Join(outside, "keep")) != "keep" {
				t.Fatalf("outside the root changed: %v", ents)
			}
			for _, n := range []string{"dev", "hl"} {
				if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
					t.Fatalf("%s was created", n)
				}
			}
		})
	}
}

// Names need not be UTF-8, and long ones survive.
func TestOddNames(t *testing.T) {
	host, box := t.TempDir(), t.TempDir()
	long := strings.Repeat("d", 120) + "/" + strings.Repeat("f", 200)
	for _, n := range []string{"caf\xe9-latin1.txt", long, "sp ace\nnewline"} {
		write(t, host, n, n, 0o644)
	}
	var in bytes.Buffer
	if _, err := PackTree(&in, host, nil, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := apply(t, box, in.Bytes(), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"caf\xe9-latin1.txt", long, "sp ace\nnewline"} {
		if read(t, filepath.Join(box, n)) != n {
			t.Fatalf("%q did not survive", n)
		}
	}
}
