// Package transfer carries a workspace between the host and a sandbox that
// mounts nothing from the host (the Kubernetes backend): the tree goes in
// as a tar stream, and what the sandbox changed comes back as a tar stream
// of changes (added or edited files, directories and symbolic links, mode
// changes, and deletions as entries of type TypeDelete).
//
// Both directions are applied with Apply, through an os.Root, treating the
// stream as hostile: names must be clean relative paths, no parent may be
// a symbolic link, device nodes and other special files are refused,
// set-id bits are cleared, sizes and entry counts are bounded, and paths a
// deny matcher names are never written (each refusal is an alarm).
package transfer

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
	"github.com/bmatcuk/doublestar/v4"
)

// Tar type flags of the change stream beyond the standard ones.
const (
	// TypeDelete: the path (a whole tree, for a directory) is gone.
	TypeDelete byte = 'W'
	// TypeChmod: only the permission bits of an existing regular file
	// changed (its content and identity did not): the receiver changes
	// the mode in place, so the change stays a mode change.
	TypeChmod byte = 'M'
)

// DefaultMaxEntries bounds the entries of one stream.
const DefaultMaxEntries = 1_000_000

// ErrTooLarge: the stream carries more bytes or entries than allowed.
var ErrTooLarge = errors.New("transfer exceeds its bound")

// ErrHostile: the stream is not what agentbox writes (an unclean name, a
// parent that is not a directory): nothing after it is applied.
var ErrHostile = errors.New("refused a malformed transfer stream")

// maxName bounds a name or a symbolic link's target.
const maxName = 4096

// CheckName accepts a clean, relative, slash-separated path below the root
// ("a/b", never "", ".", "..", "/a", "a/../b" or a NUL byte).
func CheckName(name string) error {
	switch {
	case name == "" || name == "." || len(name) > maxName:
		return fmt.Errorf("%w: bad name %q", ErrHostile, name)
	case strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0):
		return fmt.Errorf("%w: bad name %q", ErrHostile, name)
	case path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../"):
		return fmt.Errorf("%w: unclean name %q", ErrHostile, name)
	}
	return nil
}

// Matcher names the rule that denies rel ("" = not denied).
type Matcher func(rel string) string

// DenyMatcher matches the relative globs of files.read.deny and
// files.write.deny (absolute ones name paths outside the workspace) against
// a path and every directory above it: a denied directory denies its tree,
// as the mounts that protect it on Docker do.
func DenyMatcher(readDeny, writeDeny []string) Matcher {
	type rule struct{ name, glob string }
	var rules []rule
	for i, g := range readDeny {
		if g != "" && !strings.HasPrefix(g, "/") {
			rules = append(rules, rule{fmt.Sprintf("files.read.deny[%d]", i), g})
		}
	}
	for i, g := range writeDeny {
		if g != "" && !strings.HasPrefix(g, "/") {
			rules = append(rules, rule{fmt.Sprintf("files.write.deny[%d]", i), g})
		}
	}
	if len(rules) == 0 {
		return nil
	}
	return func(rel string) string {
		for p := rel; p != "." && p != ""; p = path.Dir(p) {
			for _, r := range rules {
				if doublestar.MatchUnvalidated(r.glob, p) {
					return r.name
				}
			}
		}
		return ""
	}
}

// Report is what one Apply did.
type Report struct {
	Files, Dirs, Links, Deleted int
	Bytes                       int64
	// Alarms are the entries refused or changed on the way: a denied
	// path ("created", "changed", "removed"; action "dropped"), a device
	// node or other special file ("device", "dropped"), set-id bits
	// ("setid", "cleared").
	Alarms []sandbox.Alarm
}
