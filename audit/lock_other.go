//go:build !unix

package audit

import "os"

// oNoFollow is not available here; Open still refuses a symlink found by
// Lstat.
const oNoFollow = 0

// lockFile is a no-op where flock(2) does not exist: appends are serialised
// within one process only.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) error { return nil }
