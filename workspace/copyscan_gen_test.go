package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/audit"
)

// TestCopyScanMatchesMergedView: generated sessions on a real kernel
// overlay (random trees, random writes, deletions, renames, type changes,
// recreated directories, chmods, links and touches through the merged
// view); the overlay copy's change list, read from the upper directory by
// the staging engine, is exactly what comparing the workspace with the
// merged view by content says (path, change, bytes, sum). Seeds that found
// bugs are kept in the list.
func TestCopyScanMatchesMergedView(t *testing.T) {
	for _, seed := range genSeeds(t, "AGENTBOX_SCAN_SEED", 20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			src := filepath.Join(t.TempDir(), "ws")
			genLower(r, src)
			store := Store{Dir: filepath.Join(t.TempDir(), "state", "work")}
			cp, err := NewCopy(store, src, CopyOptions{Session: "0123456789abcdef0123"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cp.Remove() })
			if cp.Kind != KindOverlay {
				t.Skipf("no overlay here: %s", cp.Kind)
			}
			merged, un := mountOverlay(t, cp)
			var ops []string
			for range 5 + r.Intn(25) {
				ops = append(ops, genOp(r, merged))
			}
			want := contentDiff(t, src, merged)
			un()
			got, err := cp.Scan()
			if err != nil {
				t.Fatal(err)
			}
			if g, w := changeLines(got), changeLines(want); g != w {
				t.Errorf("seed %d (AGENTBOX_SCAN_SEED=%d): ops:\n  %s\nchange list:\n%s\nmerged view says:\n%s", seed, seed, strings.Join(ops, "\n  "), g, w)
			}
		})
	}
}

// genSeeds are a generative test's seeds: 1..n (those that found bugs
// stay among them) and, unless -short, n more from the clock (new cases
// every run; a failure prints its seed); the one seed in the environment
// variable env instead, to replay a failure.
func genSeeds(t *testing.T, env string, n int) []int64 {
	if s := os.Getenv(env); s != "" {
		var seed int64
		if _, err := fmt.Sscan(s, &seed); err != nil {
			t.Fatalf("%s=%q: want a seed (an integer)", env, s)
		}
		return []int64{seed}
	}
	var seeds []int64
	for i := range n {
		seeds = append(seeds, int64(i+1))
	}
	if !testing.Short() {
		now := time.Now().UnixNano()
		for i := range n {
			seeds = append(seeds, now+int64(i))
		}
	}
	return seeds
}

func changeLines(cs []audit.FileChange) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s %s %d %.12s\n", c.Path, c.Change, c.Bytes, c.SHA256)
	}
	return b.String()
}

var genNames = []string{"a", "b", "c", "d", "HEAD", "x.txt"}

// genLower writes a small random tree: directories three deep, files,
// links (inside, dangling, to directories).
func genLower(r *rand.Rand, dir string) {
	_ = os.MkdirAll(dir, 0o755)
	var walk func(d string, depth int)
	walk = func(d string, depth int) {
		for _, n := range genNames {
			p := filepath.Join(d, n)
			switch k := r.Intn(10); {
			case k < 4:
				_ = os.WriteFile(p, []byte(strings.Repeat(n, r.Intn(4))), 0o644)
			case k < 6 && depth < 3:
				_ = os.Mkdir(p, 0o755)
				walk(p, depth+1)
			case k < 7:
				_ = os.Symlink(genNames[r.Intn(len(genNames))], p)
			}
		}
	}
	walk(dir, 0)
}

// genPath is a random path below dir, three deep at most.
func genPath(r *rand.Rand) string {
	parts := make([]string, 1+r.Intn(3))
	for i := range parts {
		parts[i] = genNames[r.Intn(len(genNames))]
	}
	return filepath.Join(parts...)
}

// genOp does one random thing in the merged view; errors (a parent that
// is a file, a rename overlay refuses) are part of the game.
func genOp(r *rand.Rand, merged string) string {
	rel := genPath(r)
	p := filepath.Join(merged, rel)
	content := []byte(strings.Repeat("z", r.Intn(3)))
	var err error
	op := ""
	switch r.Intn(14) {
	case 0:
		op = "write"
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		err = os.WriteFile(p, content, 0o644)
	case 1:
		op = "rm"
		err = os.Remove(p)
	case 2:
		op = "rm -rf"
		err = os.RemoveAll(p)
	case 3:
		op = "recreate dir"
		_ = os.RemoveAll(p)
		if err = os.MkdirAll(p, 0o755); err == nil {
			err = os.WriteFile(filepath.Join(p, genNames[r.Intn(len(genNames))]), content, 0o644)
		}
	case 4:
		op = "chmod"
		err = os.Chmod(p, fs.FileMode([]uint32{0o755, 0o600, 0o644}[r.Intn(3)]))
	case 5:
		op = "symlink"
		_ = os.RemoveAll(p)
		err = os.Symlink(genPath(r), p)
	case 6:
		to := genPath(r)
		op = "rename to " + to
		err = os.Rename(p, filepath.Join(merged, to))
	case 7:
		op = "touch"
		now := time.Now()
		err = os.Chtimes(p, now, now)
	case 8:
		op = "rewrite same"
		var b []byte
		if b, err = os.ReadFile(p); err == nil {
			err = os.WriteFile(p, b, 0o644)
		}
	case 9:
		op = "append"
		var f *os.File
		if f, err = os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0); err == nil {
			_, err = f.Write([]byte("+"))
			f.Close()
		}
	case 10:
		op = "mkdir"
		err = os.MkdirAll(p, 0o755)
	case 12, 13:
		op = "recreate same" // rm -rf and write it all again, as npm ci does
		err = recreateSame(p)
	case 11:
		op = "file over"
		_ = os.RemoveAll(p)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		err = os.WriteFile(p, content, 0o600)
	}
	if err != nil {
		return fmt.Sprintf("%s %s (%v)", op, rel, err)
	}
	return op + " " + rel
}

// recreateSame removes the directory p and makes it again with the same
// entries, contents, links and modes.
func recreateSame(p string) error {
	type ent struct {
		rel, target string
		mode        fs.FileMode
		data        []byte
	}
	var ents []ent
	err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		e := ent{rel: strings.TrimPrefix(q, p), mode: fi.Mode()}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			e.target, err = os.Readlink(q)
		case fi.Mode().IsRegular():
			e.data, err = os.ReadFile(q)
		}
		ents = append(ents, e)
		return err
	})
	if err != nil {
		return err
	}
	if len(ents) == 0 || !ents[0].mode.IsDir() {
		return fmt.Errorf("not a directory")
	}
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	for _, e := range ents {
		q := p + e.rel
		switch {
		case e.mode.IsDir():
			err = os.Mkdir(q, e.mode.Perm())
		case e.mode&fs.ModeSymlink != 0:
			err = os.Symlink(e.target, q)
		default:
			err = os.WriteFile(q, e.data, e.mode.Perm())
		}
		if err != nil {
			return err
		}
		if !e.mode.IsDir() && e.mode&fs.ModeSymlink == 0 {
			err = os.Chmod(q, e.mode.Perm())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

type entryView struct {
	kind, sum string
	mode      fs.FileMode
	size      int64
}

// contentView reads every non-directory below dir by content (a link by
// its target), never following a link.
func contentView(t *testing.T, dir string) map[string]entryView {
	out := map[string]entryView{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+"/"))
		v := entryView{mode: fi.Mode(), size: fi.Size()}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			s := sha256.Sum256([]byte("symlink:" + target))
			v.kind, v.sum = "link", hex.EncodeToString(s[:])
		} else {
			b, _ := os.ReadFile(p)
			s := sha256.Sum256(b)
			v.kind, v.sum = "file", hex.EncodeToString(s[:])
		}
		out[rel] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// contentDiff is the change list by content between the workspace and
// the merged view.
func contentDiff(t *testing.T, lower, merged string) []audit.FileChange {
	before, after := contentView(t, lower), contentView(t, merged)
	var out []audit.FileChange
	for p, a := range after {
		b, ok := before[p]
		c := audit.FileChange{Path: p, Bytes: a.size, SHA256: a.sum}
		switch {
		case !ok:
			c.Change = audit.ChangeAdded
		case a.kind != b.kind || a.sum != b.sum:
			c.Change = audit.ChangeModified
		case a.mode != b.mode:
			c.Change = ChangeMode
		default:
			continue
		}
		out = append(out, c)
	}
	for p, b := range before {
		if _, ok := after[p]; !ok {
			out = append(out, audit.FileChange{Path: p, Bytes: b.size, Change: audit.ChangeDeleted})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}
