package workspacetest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentbox/agentbox/workspace"
)

// testDeferred: a workspace with the Deferrer power decides a bulk
// call's changes before AfterCallDeferred returns (the hazard is held on
// the checkpoint it returns) and promotes them in the background: Wait
// gives the complete checkpoint and the workspace has every allowed
// change, the held one nowhere. A small call is not deferred. Finish
// waits for a promotion nobody waited for (nothing of it outlives the
// workspace).
func testDeferred(t *testing.T, newWS New) {
	for _, wait := range []bool{true, false} {
		t.Run(map[bool]string{true: "Waited", false: "Unwaited"}[wait], func(t *testing.T) {
			s := begin(t, newWS)
			d, ok := s.ws.(workspace.Deferrer)
			if !ok {
				s.skip(t, "has no Deferrer power")
			}
			write(t, s.view, "small.txt", "s\n")
			small, err := d.AfterCallDeferred(s.ctx, "call-1")
			if err != nil || small.Pending() || small.Checkpoint == nil {
				t.Fatalf("a one-file call: %+v, %v; want a complete checkpoint, not pending", small, err)
			}
			if b, err := os.ReadFile(filepath.Join(s.src, "small.txt")); err != nil || string(b) != "s\n" {
				t.Errorf("a small call's file after AfterCallDeferred: %q, %v", b, err)
			}
			n := workspace.BulkFiles + 10
			for i := range n {
				write(t, s.view, fmt.Sprintf("bulk/d%d/f%d", i%10, i), fmt.Sprintf("%d\n", i))
			}
			write(t, s.view, ".envrc", "echo pwned\n")
			write(t, s.view, "a.txt", "A\n")
			def, err := d.AfterCallDeferred(s.ctx, "call-2")
			if err != nil {
				t.Fatalf("AfterCallDeferred: %v", err)
			}
			if !def.Pending() || def.Checkpoint == nil || def.Checkpoint.CallID != "call-2" {
				t.Fatalf("a call writing %d files: %+v; want a pending promotion of call-2", n, def)
			}
			if h := def.Checkpoint.HeldChanges(); len(h) != 1 || h[0].Path != ".envrc" {
				t.Errorf("held by the decisions: %+v, want .envrc alone", h)
			}
			var last *workspace.Checkpoint
			if wait {
				if last, err = def.Wait(); err != nil || last == nil {
					t.Fatalf("Wait: %+v, %v", last, err)
				}
				if len(last.Promoted()) < n+1 || len(last.HeldChanges()) != 1 {
					t.Errorf("the complete checkpoint promoted %d and held %d; want ≥ %d and 1", len(last.Promoted()), len(last.HeldChanges()), n+1)
				}
			}
			res := s.finish(t, "")
			if b, err := os.ReadFile(filepath.Join(s.src, "bulk/d9/f"+fmt.Sprint(n-1))); err != nil || string(b) != fmt.Sprintf("%d\n", n-1) {
				t.Errorf("the last bulk file in the workspace: %q, %v", b, err)
			}
			if b, _ := os.ReadFile(filepath.Join(s.src, "a.txt")); string(b) != "A\n" {
				t.Errorf("a.txt in the workspace: %q, want A", b)
			}
			if _, err := os.Lstat(filepath.Join(s.src, ".envrc")); err == nil {
				t.Error("the held .envrc reached the workspace")
			}
			added := 0
			for _, f := range res.Files {
				if f.Change == "added" && f.Path != "small.txt" {
					added++
				}
			}
			if added < n {
				t.Errorf("change list: %d added, want ≥ %d", added, n)
			}
			s.close(t)
		})
	}
}
