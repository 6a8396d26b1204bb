package policy

import (
	"path"
	"strings"
)

// dirScope is the directory a wrapped command runs in when a wrapper
// changes it (env -C DIR, git -C DIR, find -execdir, tar -C DIR): the file
// paths of that command are relative to it, not to the shell's directory.
type dirScope struct {
	dirs    []string // absolute
	unknown bool     // known only at run time
}

// inDir runs fn with the file paths of the command relative to dir (a
// word of the command line); dir == nil means a directory known only at
// run time (find -execdir).
func (a *analyser) inDir(dir *word, fn func()) {
	saved := a.scope
	base := a.cwds
	if saved != nil {
		base = saved.dirs
	}
	if len(base) == 0 {
		base = []string{workspace}
	}
	s := &dirScope{unknown: a.cwdUnknown || saved != nil && saved.unknown}
	if dir == nil || dir.kind != wStatic || dir.text == "" || strings.HasPrefix(dir.text, "~") {
		s.unknown = true
		s.dirs = base
	} else {
		d := unalias(dir.text)
		for _, b := range base {
			if path.IsAbs(d) {
				s.dirs = append(s.dirs, path.Clean(d))
				break
			}
			s.dirs = append(s.dirs, path.Join(b, d))
		}
	}
	a.scope = s
	fn()
	a.scope = saved
}

// pending fills in the directory scope of a file target.
func (a *analyser) pending(r pendingRedir) pendingRedir {
	if a.scope != nil {
		r.dirs = a.scope.dirs
		r.unknownDir = a.scope.unknown
	}
	return r
}
