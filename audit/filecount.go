package audit

import (
	"fmt"
	"strconv"
	"strings"
)

// Markers among a record's files that are no file: the entry standing for
// the files past the bound of one record ("…[N more files not listed]"),
// and a list's incomplete marker (IncompleteMarker).
const (
	ChangeOmitted    = "omitted"
	ChangeIncomplete = "incomplete"
)

// omittedEntry is the marker for n files past the bound.
func omittedEntry(n int) FileChange {
	return FileChange{Path: fmt.Sprintf("…[%d more files not listed]", n), Change: ChangeOmitted}
}

// CountFiles is how many files a list of changes stands for: each entry,
// plus the files an omitted marker counts, and no marker itself. The
// terminal's `files changed` and a session_end record's list count alike.
func CountFiles(files []FileChange) int {
	n := 0
	for _, f := range files {
		switch f.Change {
		case ChangeIncomplete:
		case ChangeOmitted:
			num, _, _ := strings.Cut(strings.TrimPrefix(f.Path, "…["), " ")
			k, _ := strconv.Atoi(num)
			n += k
		default:
			n++
		}
	}
	return n
}
