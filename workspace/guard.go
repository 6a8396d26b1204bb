package workspace

import (
	"path"
	"strings"

	"github.com/agentbox/agentbox/audit"
)

// hostExecuted reports whether the host's own tools run or load p as
// configuration: git's config and hooks (in any .git directory, nested ones
// included) and .envrc. Apply never writes these: a change the sandbox
// made there would run on the host (DESIGN.md, "Enforcement in layers").
func hostExecuted(p string) bool {
	if path.Base(p) == ".envrc" {
		return true
	}
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if part != ".git" || i+1 >= len(parts) {
			continue
		}
		switch parts[i+1] {
		case "config", "hooks", "commondir", "modules", "worktrees":
			return true
		}
	}
	return false
}

// guarded lists the changes Apply refuses to write.
func guarded(changes []audit.FileChange) []string {
	var out []string
	for _, c := range changes {
		if c.Change != ChangeIncomplete && hostExecuted(c.Path) {
			out = append(out, c.Path)
		}
	}
	return out
}
