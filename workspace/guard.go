package workspace

import (
	"fmt"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/audit"
)

// hostExecuted reports whether the host's own tools run or load p as
// configuration: git's config and hooks (in any .git directory, nested ones
// included) and .envrc. Apply never writes these: a change the sandbox
// made there would run on the host (docs/DESIGN.md, "Enforcement in layers").
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

// Hazards lists the copy's changes that are host hazards (the same
// decisions as promotion after every call in rw mode): for an overlay,
// read from its upper directory with the staging engine; for a real copy,
// by path (and gitdir: content).
func (c *Copy) Hazards() ([]StagedChange, error) {
	var out []StagedChange
	if c.Kind == KindOverlay {
		st := c.stage // the session's, with its files.write rules
		if st == nil {
			var err error
			if st, err = OpenStage(c.Upper(), c.Workspace, c.StageDir(), nil); err != nil {
				return nil, err
			}
		}
		list, err := st.ListAll()
		if err != nil {
			return nil, err
		}
		for _, ch := range list {
			if ch.Held != "" && ch.Held != HazardConflict {
				out = append(out, ch)
			}
		}
		return out, nil
	}
	// A real copy: its changes decided against the tree and the
	// workspace together, as promotion decides an upper layer.
	l := (&Stage{Upper: c.ChangedRoot(), Lower: c.Workspace, tree: true}).newLister(true)
	for _, ch := range c.Meta.Changes {
		if ch.Change == ChangeIncomplete {
			continue
		}
		sc := StagedChange{Path: ch.Path, Change: ch.Change, Type: TypeFile}
		if ch.Change != "deleted" {
			st, err := fstree.Lstat(unix.AT_FDCWD, filepath.Join(c.ChangedRoot(), filepath.FromSlash(ch.Path)))
			if err != nil {
				return nil, fmt.Errorf("reading the copy at %s: %w", ch.Path, err)
			}
			sc.Type = typeOf(st)
		}
		if rule, why := l.hazard(&sc); rule != "" {
			sc.Held, sc.Why = rule, why
			out = append(out, sc)
		}
	}
	return out, nil
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
