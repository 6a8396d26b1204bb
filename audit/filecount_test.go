package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// A session_end with more files than one record keeps still counts them
// all (the entries kept and the marker's count of the rest) and keeps the
// list's incomplete marker.
func TestCountFilesPastTheBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "audit.jsonl")
	w, err := Open(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var files []FileChange
	for i := range maxFiles + 489 {
		files = append(files, FileChange{Path: fmt.Sprintf(".venv/f%d", i), Change: ChangeAdded})
	}
	files = append(files, FileChange{Path: "(incomplete: a bound)", Change: ChangeIncomplete})
	if err := w.Append(&Record{Event: EventSessionEnd, Session: "s", Status: "ok", Files: files}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []FileChange
	if err := ScanLines(f, func(_ int, _ []byte, rec *Record) error { got = rec.Files; return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != maxFiles+2 || CountFiles(got) != maxFiles+489 || CountFiles(files) != maxFiles+489 || got[len(got)-1].Change != ChangeIncomplete {
		t.Errorf("kept %d entries counting %d, want %d entries counting %d (as the full list: %d), the last the incomplete marker", len(got), CountFiles(got), maxFiles+2, maxFiles+489, CountFiles(files))
	}
}
