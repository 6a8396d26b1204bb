package audit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/audit/proof"
)

// audit.checkpoints: closing the writer leaves a signed checkpoint of the
// whole log in the directory, which verifies against the log.
func TestCheckpointAtClose(t *testing.T) {
	skey, vkey, err := proof.KeyGen("cp.example")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cpDir := filepath.Join(dir, "elsewhere")
	path := filepath.Join(dir, "audit.jsonl")
	if _, err := Open(path, Options{Checkpoints: cpDir, CheckpointKey: "not a key"}); err == nil {
		t.Fatal("a bad signer key was accepted")
	}
	for round, want := range []int64{6, 12} {
		w, err := Open(path, Options{Checkpoints: cpDir, CheckpointKey: skey})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range sampleSession("s"+string(rune('a'+round)), float64(round*10), true)[:6] {
			if err := w.Append(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		note, err := os.ReadFile(filepath.Join(cpDir, itoa(int(want))+".checkpoint"))
		if err != nil {
			t.Fatal(err)
		}
		cp, err := proof.Open(note, vkey)
		if err != nil || cp.Size != want {
			t.Fatalf("%v %+v", err, cp)
		}
		f, _ := os.Open(path)
		tr, _ := proof.ReadTree(f)
		f.Close()
		if root, _ := tr.Root(want); root != cp.Root {
			t.Fatal("the checkpoint's root is not the log's")
		}
	}
}
