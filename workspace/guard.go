package workspace

import (
	"path"
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
		list, err := c.listAll()
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
	l, err := (&Stage{Upper: c.ChangedRoot(), Lower: c.Workspace, tree: true}).newLister(true)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	for _, ch := range c.Meta.Changes {
		if ch.Change == ChangeIncomplete {
			continue
		}
		sc := StagedChange{Path: ch.Path, Change: ch.Change, Type: TypeFile}
		if ch.Change != "deleted" {
			// Through descriptors: a link in the copy is never followed.
			// An entry that cannot be read cannot be decided: held.
			st, err := l.up.Stat(ch.Path)
			if err == nil {
				sc.Type = typeOf(st)
				if st.IsSymlink() {
					sc.target, err = l.up.Readlink(ch.Path)
				}
			}
			if err != nil {
				sc.Held, sc.Why = HazardNotStaged, "the copy's entry could not be read to decide it ("+err.Error()+"); undecided changes are held"
				out = append(out, sc)
				continue
			}
		}
		rule, why := l.hazard(&sc)
		if rule == "" && sc.Type == TypeSymlink && sc.Change != "deleted" {
			// Judged by where it resolves in the tree apply writes.
			if why = l.linkHazard(sc.Path, sc.target); why != "" {
				rule = HazardSymlink
			}
		}
		if rule != "" {
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
