package audit

import "strings"

// IncompleteMarker is the last entry of a change list that misses changes.
func IncompleteMarker(why string) FileChange {
	return FileChange{Path: "(incomplete: " + why + ")", Change: ChangeIncomplete}
}

// Incomplete reports why changes misses changes ("" when it is complete).
func Incomplete(changes []FileChange) string {
	for _, c := range changes {
		if c.Change == ChangeIncomplete {
			return strings.TrimSuffix(strings.TrimPrefix(c.Path, "(incomplete: "), ")")
		}
	}
	return ""
}
