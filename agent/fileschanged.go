package agent

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// generatedDirs are trees tools generate by the thousand (objects of a
// git repository, virtual environments, packages, byte code): `files
// changed` counts them as one entry each.
var generatedDirs = []string{".git/objects/", ".venv/", "venv/", "node_modules/", "__pycache__/"}

// generatedTree is the generated tree p lies in ("dir/.venv/"), or "".
func generatedTree(p string) string {
	for i := 0; ; {
		for _, d := range generatedDirs {
			if strings.HasPrefix(p[i:], d) {
				return p[:i+len(d)]
			}
		}
		j := strings.IndexByte(p[i:], '/')
		if j < 0 {
			return ""
		}
		i += j + 1
	}
}

// maxFileEntries is how many entries `files changed` names.
const maxFileEntries = 10

// filesChangedLine is the terminal's `files changed (N): …` line: N is
// audit.CountFiles (what session_end's list counts too); the files one
// by one, then each generated tree as one entry with its count (".venv/
// 1,480 files"), at most maxFileEntries entries. "" when nothing changed.
func filesChangedLine(files []audit.FileChange) string {
	total := audit.CountFiles(files)
	if total == 0 {
		return ""
	}
	var entries, trees []string
	inTree := map[string]int{}
	for _, f := range files {
		if f.Change == audit.ChangeIncomplete || f.Change == audit.ChangeOmitted {
			continue
		}
		if t := generatedTree(f.Path); t != "" {
			if inTree[t] == 0 {
				trees = append(trees, t)
			}
			inTree[t]++
			continue
		}
		entries = append(entries, fmt.Sprintf("%s (%s)", policy.Visible(f.Path), f.Change))
	}
	for _, t := range trees {
		entries = append(entries, policy.Visible(t)+" "+countOf(inTree[t], "file"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "files changed (%s):", thousands(total))
	for i, e := range entries {
		if i == maxFileEntries {
			fmt.Fprintf(&b, " … and %d more", len(entries)-maxFileEntries)
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(" " + e)
	}
	return b.String()
}

// countOf is "1 file", "1,480 files".
func countOf(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return thousands(n) + " " + what + "s"
}

// thousands writes n with thousands separators (1,480).
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
