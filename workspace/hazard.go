package workspace

import (
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentbox/agentbox/internal/fstree"
	"golang.org/x/sys/unix"
)

// ownGitPromoted are the entries of the workspace's own .git directory
// that are promoted (so git add and git commit work in the sandbox): the
// object store, refs, the index, logs, HEAD and the other state files git
// writes as a ref or a message. Anything else there (config, hooks/,
// info/, commondir, modules/, worktrees/, objects/info/) is a hazard.
var ownGitPromoted = map[string]bool{
	"objects": true, "refs": true, "logs": true, "index": true, "packed-refs": true,
	"HEAD": true, "ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true,
	"CHERRY_PICK_HEAD": true, "REVERT_HEAD": true, "AUTO_MERGE": true,
	"COMMIT_EDITMSG": true, "MERGE_MSG": true, "MERGE_MODE": true, "SQUASH_MSG": true,
}

// Hazard rules, as they appear in held changes and alarms.
const (
	HazardGitRepo   = "hazard:git-repository"
	HazardGitOwn    = "hazard:git-config"
	HazardHostRun   = "hazard:host-runs"
	HazardSymlink   = "hazard:symlink-outside"
	HazardSpecial   = "hazard:special-file"
	HazardParent    = "hazard:held-parent"
	HazardConflict  = "conflict"
	HazardDiskFull  = "disk-full"
	HazardNotStaged = "hazard:unreadable"
)

// pathHazard is the host hazard a change at rel is by its path alone
// ("" when none): the rule and why. ownGit says the workspace's own .git
// is a directory (its objects, refs, index and logs are then promoted).
// The host-run catalogue (hostrun.yaml) is matched case-insensitively and
// Unicode-normalised; hazards that depend on the entry's type and content
// (git's discovery rules) are gitHazard's.
func pathHazard(rel string, ownGit bool) (rule, why string) {
	segs := strings.Split(rel, "/")
	if ownGit && isDotGit(segs[0]) {
		if segs[0] != ".git" || len(segs) == 1 {
			return HazardGitOwn, "the workspace's own .git itself (or a name that opens as it)"
		}
		if !ownGitPromoted[segs[1]] || segs[1] == "objects" && len(segs) > 2 && foldName(segs[2]) == "info" {
			return HazardGitOwn, ".git/" + segs[1] + " is configuration git reads or runs"
		}
	}
	if e := HostRun.Match(rel, false, ownGit && segs[0] == ".git"); e != nil {
		return e.rule(), e.Tool + " (" + e.Family + "): " + e.Why
	}
	return "", ""
}

// symlinkOutside reports whether a symlink at rel with target leaves the
// workspace on the host (an absolute target always does: /workspace is
// not the host path).
func symlinkOutside(rel, target string) bool {
	if target == "" || path.IsAbs(target) {
		return true
	}
	j := path.Join(path.Dir(rel), target)
	return j == ".." || strings.HasPrefix(j, "../")
}

// symlinkWhy says why a symlink to target is held and what works instead:
// the file copied (python3 -m venv --copies for a venv, whose
// bin/python3 otherwise links to /usr/bin/python3).
func symlinkWhy(target string) string {
	if len(target) > 80 {
		target = target[:80] + "..."
	}
	return "a symlink pointing outside the workspace (to " + strconv.Quote(target) + ") is never promoted; " +
		"copy the file instead of linking it (a Python venv: python3 -m venv --copies)"
}

// hasOwnGit reports whether the workspace has its own repository: a .git
// directory (not a link, not a gitdir: file) at its top.
func hasOwnGit(workspace string) bool {
	st, err := fstree.Lstat(unix.AT_FDCWD, filepath.Join(workspace, ".git"))
	return err == nil && st.IsDir()
}
