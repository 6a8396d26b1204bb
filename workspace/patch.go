package workspace

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/internal/fstree"
)

// maxPatchBytes: larger files are shown as "Binary files ... differ".
const maxPatchBytes = 4 << 20

// contextLines around each change in a hunk.
const contextLines = 3

// WritePatch writes a git-style unified diff of changes: old versions are
// read from oldDir (the workspace), new ones from newDir (the copy's
// changed root). Text files get hunks; binary or large files a "Binary
// files differ" line; mode changes and symlinks git's headers. Both
// directories are read through an os.Root.
func WritePatch(w io.Writer, oldDir, newDir string, changes []audit.FileChange) error {
	oldRoot, err := os.OpenRoot(oldDir)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	defer oldRoot.Close()
	newRoot, err := os.OpenRoot(newDir)
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	defer newRoot.Close()
	for _, c := range changes {
		if c.Change == ChangeIncomplete {
			fmt.Fprintf(w, "# %s\n", gitPath("", c.Path))
			continue
		}
		var o, n side
		if c.Change != audit.ChangeAdded {
			o = readSide(oldRoot, c.Path)
		}
		if c.Change != audit.ChangeDeleted {
			n = readSide(newRoot, c.Path)
		}
		if err := writeFilePatch(w, c.Path, o, n); err != nil {
			return err
		}
	}
	return nil
}

// side is one version of a file: mode 0 means absent.
type side struct {
	mode   uint32 // git's: 100644, 100755, 120000
	data   []byte
	binary bool
}

func readSide(root *os.Root, p string) side {
	fi, err := root.Lstat(p)
	if err != nil {
		return side{}
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, _ := root.Readlink(p)
		return side{mode: 0o120000, data: []byte(t)}
	case !fi.Mode().IsRegular():
		return side{}
	}
	s := side{mode: 0o100644}
	if fi.Mode()&0o111 != 0 {
		s.mode = 0o100755
	}
	if fi.Size() > maxPatchBytes {
		s.binary = true
		return s
	}
	f, err := root.OpenFile(p, os.O_RDONLY|fstree.OpenNoFollow, 0)
	if err != nil {
		s.binary = true
		return s
	}
	defer f.Close()
	s.data, err = io.ReadAll(io.LimitReader(f, maxPatchBytes+1))
	s.binary = err != nil || len(s.data) > maxPatchBytes || bytes.IndexByte(s.data, 0) >= 0
	return s
}

func writeFilePatch(w io.Writer, p string, o, n side) error {
	same := bytes.Equal(o.data, n.data) && o.binary == n.binary && !(o.binary && o.data == nil) // too large to compare
	if same && o.mode == n.mode {
		return nil // nothing git would show (e.g. only a time changed)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "diff --git %s %s\n", gitPath("a/", p), gitPath("b/", p))
	switch {
	case o.mode == 0:
		fmt.Fprintf(&b, "new file mode %o\n", n.mode)
	case n.mode == 0:
		fmt.Fprintf(&b, "deleted file mode %o\n", o.mode)
	case o.mode != n.mode:
		fmt.Fprintf(&b, "old mode %o\nnew mode %o\n", o.mode, n.mode)
	}
	if same {
		_, err := io.WriteString(w, b.String())
		return err
	}
	from, to := gitPath("a/", p), gitPath("b/", p)
	if o.mode == 0 {
		from = "/dev/null"
	}
	if n.mode == 0 {
		to = "/dev/null"
	}
	if o.binary || n.binary {
		fmt.Fprintf(&b, "Binary files %s and %s differ\n", from, to)
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", from, to)
	writeHunks(&b, diffLines(splitLines(o.data), splitLines(n.data)))
	_, err := io.WriteString(w, b.String())
	return err
}

// splitLines splits after each newline; a last line without one keeps none.
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	lines := strings.SplitAfter(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// writeHunks writes the edits as unified hunks with contextLines of context.
func writeHunks(b *strings.Builder, edits []edit) {
	// Positions: line numbers in a and b before each edit.
	type pos struct{ a, b int }
	at := make([]pos, len(edits)+1)
	for i, e := range edits {
		at[i+1] = at[i]
		if e.op != '+' {
			at[i+1].a++
		}
		if e.op != '-' {
			at[i+1].b++
		}
	}
	for i := 0; i < len(edits); {
		if edits[i].op == ' ' {
			i++
			continue
		}
		start := max(i-contextLines, 0)
		end := i
		for j := i; j < len(edits); j++ {
			if edits[j].op != ' ' {
				end = j + 1
			} else if j-end >= 2*contextLines {
				break
			}
		}
		stop := min(end+contextLines, len(edits))
		fmt.Fprintf(b, "@@ -%s +%s @@\n", hunkRange(at[start].a, at[stop].a-at[start].a), hunkRange(at[start].b, at[stop].b-at[start].b))
		for _, e := range edits[start:stop] {
			b.WriteByte(e.op)
			b.WriteString(e.line)
			if !strings.HasSuffix(e.line, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
