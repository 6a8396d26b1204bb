package sandbox

import (
	"fmt"
	"os"
	"syscall"
)

// DefaultUser is the uid:gid a sandbox runs as when sandbox.user is not
// set: the invoking user's, so that files it creates belong to that user.
// When the invoker is root and the workspace belongs to another user, that
// user's (root would otherwise create files the owner cannot change); when
// the workspace is root's too, "0:0", which the caller should say out loud
// (the sandbox keeps no capability, so it changes only what root owns).
func DefaultUser(workspace string) string {
	if os.Geteuid() != 0 {
		return fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
	}
	if fi, err := os.Stat(workspace); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 {
			return fmt.Sprintf("%d:%d", st.Uid, st.Gid)
		}
	}
	return "0:0"
}

// IsRootUser reports whether a uid:gid (or uid) names uid 0.
func IsRootUser(user string) bool {
	return user == "0" || len(user) > 1 && user[:2] == "0:" || user == "root" || len(user) > 4 && user[:5] == "root:"
}
