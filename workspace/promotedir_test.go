package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// The per-directory, parallel promotion promotes every file of a call
// (a directory larger than one worker's share included, edits and
// deletions beside additions), each with the sha256 of the bytes it
// wrote and the before-image rewind needs; promoted, nothing is listed
// again, and a rewind puts the workspace back byte for byte.
func TestPromoteManyFilesPerDirectory(t *testing.T) {
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("old/e%d.txt", i)] = fmt.Sprint("old ", i)
		files[fmt.Sprintf("old/g%d.txt", i)] = "gone"
	}
	lower, upper, state := stageDirs(t, files)
	orig := treeContent(t, lower)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for i := range 2*promoteChunk + 7 {
		p := fmt.Sprintf("big/f%d.txt", i)
		want[p] = strings.Repeat(fmt.Sprint(i), 100)
		put(t, upper, p, want[p])
	}
	for i := range 30 {
		p := fmt.Sprintf("sub%d/deeper/f.txt", i%7)
		if i < 7 {
			want[p] = "deep"
			put(t, upper, p, want[p])
		}
		p = fmt.Sprintf("old/e%d.txt", i)
		want[p] = fmt.Sprint("edited ", i)
		put(t, upper, p, want[p])
		whiteout(t, upper, fmt.Sprintf("old/g%d.txt", i))
	}
	cp := mustPromote(t, s, "call-1")
	if h := cp.HeldChanges(); len(h) != 0 {
		t.Fatalf("held: %+v", h)
	}
	for p, c := range want {
		b, err := os.ReadFile(filepath.Join(lower, p))
		if err != nil || string(b) != c {
			t.Fatalf("%s = %q, %v; want %q", p, b, err, c)
		}
	}
	for _, c := range cp.Changes {
		switch {
		case c.Type == TypeDir:
		case c.Change == "deleted":
			if exists(filepath.Join(lower, c.Path)) || c.Before != sum([]byte("gone")) {
				t.Fatalf("deleted %s: %+v", c.Path, c)
			}
		default:
			if c.After != sum([]byte(want[c.Path])) || c.Bytes != int64(len(want[c.Path])) {
				t.Fatalf("%s: sha256 %s, %d bytes; want the promoted bytes'", c.Path, c.After, c.Bytes)
			}
			if _, ok := cp.After[c.Path]; !ok {
				t.Fatalf("%s: no stamp after promotion", c.Path)
			}
			if c.Change == "modified" && c.Before != sum([]byte(files[c.Path])) {
				t.Fatalf("%s: sha256 before %s", c.Path, c.Before)
			}
		}
	}
	if left, _ := filepath.Glob(filepath.Join(lower, "*", ".*agentbox*")); len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
	if cp := mustPromote(t, s, "call-2"); cp != nil {
		t.Fatalf("promoted entries listed again: %+v", cp.Changes)
	}
	if _, err := s.Rewind("call-1"); err != nil {
		t.Fatal(err)
	}
	if got := treeContent(t, lower); fmt.Sprint(got) != fmt.Sprint(orig) {
		t.Fatalf("rewound workspace differs:\n%v\nwant\n%v", got, orig)
	}
}

// A promotion killed half-way leaves temporary files and before-images
// of its checkpoint; the next promotion (the same checkpoint number)
// replaces them: nothing is held for them, and the before-image is the
// workspace's file.
func TestPromoteAfterKilledPromotion(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"a.txt": "before", "d/b.txt": "b0"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, "a.txt", "after")
	put(t, upper, "d/b.txt", "b1")
	put(t, lower, tmpName("a.txt", 1), "half")
	put(t, lower, tmpName("d/b.txt", 1), "half")
	put(t, state, "before/1/a.txt", "stale")
	cp := mustPromote(t, s, "call-1")
	if h := cp.HeldChanges(); len(h) != 0 {
		t.Fatalf("held: %+v", h)
	}
	for p, c := range map[string]string{"a.txt": "after", "d/b.txt": "b1"} {
		if got := readOr(filepath.Join(lower, p)); got != c {
			t.Fatalf("%s = %q", p, got)
		}
		if exists(filepath.Join(lower, tmpName(p, 1))) {
			t.Fatalf("%s: temporary file left", p)
		}
	}
	if got := readOr(filepath.Join(state, "before/1/a.txt")); got != "before" {
		t.Fatalf("before-image %q", got)
	}
}

// A file that replaces a workspace directory: the directory's entries
// go first, then the file takes its place.
func TestPromoteFileOverDirectory(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{"x/in.txt": "in", "x/sub/deep.txt": "deep"})
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	put(t, upper, "x", "now a file")
	cp := mustPromote(t, s, "call-1")
	if h := cp.HeldChanges(); len(h) != 0 {
		t.Fatalf("held: %+v", h)
	}
	if got := readOr(filepath.Join(lower, "x")); got != "now a file" {
		t.Fatalf("x = %q", got)
	}
}

// A large file goes by a reflink or copy_file_range, and its sha256 is
// still that of the bytes promoted.
func TestPromoteLargeFile(t *testing.T) {
	lower, upper, state := stageDirs(t, nil)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), cloneMin/16*3+5)
	put(t, upper, "big.bin", string(big))
	cp := mustPromote(t, s, "call-1")
	if len(cp.Promoted()) != 1 || cp.Promoted()[0].After != sum(big) || cp.Promoted()[0].Bytes != int64(len(big)) {
		t.Fatalf("%+v", cp.Changes)
	}
	if b, _ := os.ReadFile(filepath.Join(lower, "big.bin")); !bytes.Equal(b, big) {
		t.Fatalf("big.bin: %d bytes, not the staged ones", len(b))
	}
}

// The content decisions on the bytes promoted are those on the file.
func TestContentHazardOnBytes(t *testing.T) {
	p := &promoter{}
	for _, tc := range []struct {
		path, content string
		head          [2]bool
		held          bool
	}{
		{"a.txt", "plain", [2]bool{}, false},
		{"a.txt", " \tGitDir: ../x", [2]bool{}, true},
		{"d/HEAD", "ref: refs/heads/main\n", [2]bool{true, true}, false},
		{"d/HEAD", "ref: refs/heads/main\n", [2]bool{false, false}, true},
		{"d/HEAD", "not a head", [2]bool{false, false}, false},
	} {
		c := &StagedChange{Path: tc.path, headValid: tc.head}
		if rule, _ := p.contentHazard(c, []byte(tc.content)); (rule != "") != tc.held {
			t.Errorf("%s %q: rule %q, want held %v", tc.path, tc.content, rule, tc.held)
		}
	}
}
