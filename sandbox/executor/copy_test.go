package executor

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/sandbox/transfer"
	"github.com/agentbox/agentbox/sandbox/wire"
)

// copy_in unpacks the tree; after a command, copy_out sends back exactly
// what it changed, and nothing the second time.
func TestServeCopyInOut(t *testing.T) {
	s := hostServer(t)
	h := serve(t, s, &wire.Request{})
	if r := h.recv(); r.Error != "" || r.Protocol != wire.Protocol {
		t.Fatalf("hello: %+v", r)
	}
	src := t.TempDir()
	for p, c := range map[string]string{"a.txt": "a\n", "keep.txt": "k\n", "d/b.txt": "b\n"} {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755)
		if err := os.WriteFile(filepath.Join(src, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var tree bytes.Buffer
	if _, err := transfer.PackTree(&tree, src, nil, 0); err != nil {
		t.Fatal(err)
	}
	half := tree.Len() / 2
	h.send(&wire.Request{Op: wire.OpCopyIn, Copy: &wire.CopyReq{Data: tree.Bytes()[:half], Limit: 1 << 20}})
	if r := h.recv(); r.Error != "" {
		t.Fatal(r.Error)
	}
	h.send(&wire.Request{Op: wire.OpCopyIn, Copy: &wire.CopyReq{Data: tree.Bytes()[half:], Done: true}})
	if r := h.recv(); r.Error != "" || r.Copy == nil || r.Copy.Entries != 4 {
		t.Fatalf("copy_in: %+v", r)
	}
	h.send(&wire.Request{Op: wire.OpExec, Command: "cat d/b.txt && rm a.txt && echo n > n.txt", TimeoutMS: 20_000})
	if r := h.recv(); r.Error != "" || string(r.Output) != "b\n" {
		t.Fatalf("exec: %+v", r)
	}
	pull := func() []byte {
		var out bytes.Buffer
		req := &wire.CopyReq{Start: true}
		for {
			h.send(&wire.Request{Op: wire.OpCopyOut, Copy: req})
			r := h.recv()
			if r.Error != "" || r.Copy == nil {
				t.Fatalf("copy_out: %+v", r)
			}
			out.Write(r.Copy.Data)
			if r.Copy.Done {
				return out.Bytes()
			}
			req = &wire.CopyReq{}
		}
	}
	root, err := os.OpenRoot(src)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	rep, err := transfer.Apply(root, bytes.NewReader(pull()), transfer.ApplyOptions{})
	if err != nil || rep.Deleted != 1 || rep.Files != 1 {
		t.Fatalf("apply: %+v %v", rep, err)
	}
	if _, err := os.Stat(filepath.Join(src, "a.txt")); err == nil {
		t.Fatal("deletion not carried")
	}
	if b, _ := os.ReadFile(filepath.Join(src, "n.txt")); string(b) != "n\n" {
		t.Fatal("new file not carried")
	}
	rep, err = transfer.Apply(root, bytes.NewReader(pull()), transfer.ApplyOptions{})
	if err != nil || rep.Files+rep.Deleted+rep.Dirs != 0 {
		t.Fatalf("second pull not empty: %+v %v", rep, err)
	}
	h.w.Close()
}
