package workspace

import (
	"os"
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
	ownGit := hasOwnGit(c.Workspace)
	for _, ch := range c.Meta.Changes {
		if ch.Change == ChangeIncomplete {
			continue
		}
		rule, why := pathHazard(ch.Path, ownGit)
		if rule == "" && ch.Change != "deleted" && gitdirFile(filepath.Join(c.ChangedRoot(), filepath.FromSlash(ch.Path))) {
			rule, why = HazardGitRepo, "a gitdir: link to a git repository"
		}
		for d := path.Dir(ch.Path); rule == "" && ch.Change != "deleted"; d = path.Dir(d) {
			first := ch.Path
			if d != "." {
				first = strings.TrimPrefix(ch.Path, d+"/")
			}
			first, _, _ = strings.Cut(first, "/")
			if gitEntries[first] && !(ownGit && d == ".git") && treeIsGitDir(c.ChangedRoot(), d) {
				rule, why = HazardGitRepo, d+" would be a git repository (HEAD, objects/, refs/)"
			}
			if d == "." {
				break
			}
		}
		if rule != "" {
			out = append(out, StagedChange{Path: ch.Path, Change: ch.Change, Held: rule, Why: why})
		}
	}
	return out, nil
}

// treeIsGitDir reports whether dir below root holds HEAD with objects/
// and refs/, or HEAD with commondir.
func treeIsGitDir(root, dir string) bool {
	is := func(name string, wantDir bool) bool {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir), name))
		return err == nil && fi.IsDir() == wantDir
	}
	return is("HEAD", false) && (is("objects", true) && is("refs", true) || is("commondir", false))
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
