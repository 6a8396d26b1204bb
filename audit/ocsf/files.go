package ocsf

import (
	"fmt"
	"strconv"

	"github.com/agentbox/agentbox/audit"
)

// fileActivities are the File System Activity activities of the changes
// agentbox records (audit.FileChange.Change); another kind is Other.
var fileActivities = map[string]struct {
	id   int
	name string
}{
	audit.ChangeAdded: {1, "Create"}, audit.ChangeModified: {3, "Update"}, audit.ChangeDeleted: {4, "Delete"},
	"restored": {3, "Update"}, "mode": {6, "Set Attributes"},
}

// fileChanges maps the files of a record (a `changes` checkpoint, or what
// a session changed, at session_end) to File System Activity, one event
// per file: the file as the change left it (as it was, when deleted) with
// its SHA-256 and size. The markers of an incomplete list and of files
// past the record's bound are no file and no event. Each event's metadata.uid is the record's hash and the file's
// place in it ("<sha256>/<n>").
func (x *exporter) fileChanges(s *src) []map[string]any {
	rec := s.rec
	var out []map[string]any
	for i, f := range rec.Files {
		if f.Change == audit.ChangeIncomplete || f.Change == audit.ChangeOmitted {
			continue
		}
		act, ok := fileActivities[f.Change]
		if !ok {
			act.id, act.name = 99, f.Change
		}
		e := x.newEvent(s, ClassFileActivity, act.id, act.name)
		e.m["metadata"].(map[string]any)["uid"] = s.sum + "/" + strconv.Itoa(i+1)
		file := fileObj(f.Path, false)
		sum := f.SHA256
		if f.Change == audit.ChangeDeleted {
			sum = firstOf(f.SHA256Before, f.SHA256)
		} else {
			file["size"] = f.Bytes
		}
		if sum != "" {
			file["hashes"] = []any{map[string]any{"algorithm_id": 3, "algorithm": "SHA-256", "value": sum}}
		}
		e.m["file"] = file
		e.actorDevice(x, rec, true)
		e.status(true, "")
		what := "call " + rec.CallID
		if rec.Event == audit.EventSessionEnd {
			what = "session " + rec.Session
		}
		e.m["message"] = fmt.Sprintf("%s %s (%d bytes) by %s", f.Change, f.Path, f.Bytes, what)
		e.unmapped("call_id", rec.CallID)
		e.unmapped("tool", rec.Tool)
		e.unmapped("change", f.Change)
		if f.Change != audit.ChangeDeleted {
			e.unmapped("sha256_before", f.SHA256Before)
		}
		e.unmapped("reason", rec.Reason)
		e.unmapped("file_index", i+1)
		e.unmapped("files", audit.CountFiles(rec.Files))
		out = append(out, e.done())
	}
	return out
}
