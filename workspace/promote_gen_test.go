package workspace

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// TestPromotionMatchesMergedView: generated sessions of several calls on a
// real kernel overlay (random trees; random writes, deletions, renames,
// type changes, recreated directories, chmods, links and touches in the
// sandbox's view; no host user action). After every call the workspace
// holds exactly what the sandbox sees (by content) until a host hazard is
// held, and nothing is held as a conflict or a failed promotion. Seeds
// that found bugs are kept in the list.
func TestPromotionMatchesMergedView(t *testing.T) {
	for _, seed := range genSeeds(t, "AGENTBOX_PROMOTE_SEED", 10) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r, lower, merged, s := genSession(t, seed, nil)
			var ops []string
			for call := range 2 + r.Intn(5) {
				for range 1 + r.Intn(8) {
					ops = append(ops, fmt.Sprintf("call %d: %s", call, genOp(r, merged)))
				}
				cp, err := s.Promote(fmt.Sprint(call))
				if err != nil {
					t.Fatalf("seed %d call %d: %v\n  %s", seed, call, err, strings.Join(ops, "\n  "))
				}
				held := map[string]string{}
				for _, c := range changesOf(cp) {
					if c.Held != "" {
						held[c.Path] = c.Held + ": " + c.Why
					}
				}
				// A host hazard (a link that leaves, a name git reads) is
				// held by design, and what it keeps in place (a directory
				// it is in) with it; a conflict or a failed promotion
				// alone, with nobody else writing, is a bug.
				hazard := false
				for _, why := range held {
					hazard = hazard || strings.HasPrefix(why, "hazard:") && !strings.HasPrefix(why, HazardNotStaged)
				}
				for p, why := range held {
					if !hazard {
						t.Fatalf("seed %d (AGENTBOX_PROMOTE_SEED=%d) call %d: %s held (%s)\n  %s", seed, seed, call, p, why, strings.Join(ops, "\n  "))
					}
				}
				if len(held) > 0 {
					return // a hazard held: the views differ by design from here
				}
				if d := viewDiff(contentView(t, lower), contentView(t, merged)); d != "" {
					t.Fatalf("seed %d (AGENTBOX_PROMOTE_SEED=%d) call %d: the workspace and the sandbox's view differ:\n%s\nops:\n  %s", seed, seed, call, d, strings.Join(ops, "\n  "))
				}
			}
		})
	}
}

// viewDiff lists the paths two content views disagree on ("" = none).
func viewDiff(a, b map[string]entryView) string {
	var out []string
	for p, v := range a {
		if w, ok := b[p]; !ok {
			out = append(out, "only in the workspace: "+p)
		} else if v.kind != w.kind || v.sum != w.sum || v.mode != w.mode {
			out = append(out, fmt.Sprintf("differs: %s (workspace %s %v, sandbox %s %v)", p, v.kind, v.mode, w.kind, w.mode))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, "only in the sandbox's view: "+p)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestPromotionKeepsMovedInUserFiles: generated sessions as above, with
// the user moving an old directory of theirs (files older than the
// session: no ctime gives them away) into a random sealed directory (one
// the sandbox made or recreated: it sees only its own entries there)
// between calls. Whatever the sandbox does next, the user's files stay as
// they were, as long as the directory stays sealed (a held deletion that
// shows the workspace's directory to the sandbox again unseals it).
func TestPromotionKeepsMovedInUserFiles(t *testing.T) {
	for _, seed := range genSeeds(t, "AGENTBOX_MOVEDIN_SEED", 10) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			old := t.TempDir()
			r, lower, merged, s := genSession(t, seed, func() {
				for i := range 3 {
					put(t, old, fmt.Sprintf("U%d/notes.txt", i), fmt.Sprintf("user %d", i))
					put(t, old, fmt.Sprintf("U%d/sub/deep.txt", i), fmt.Sprintf("deep %d", i))
				}
			})
			var ops []string
			moved := map[string]string{} // user dir -> the sealed directory it went into
			for call := range 3 + r.Intn(5) {
				for range 1 + r.Intn(6) {
					ops = append(ops, fmt.Sprintf("call %d: %s", call, genOp(r, merged)))
				}
				if _, err := s.Promote(fmt.Sprint(call)); err != nil {
					t.Fatalf("seed %d call %d: %v", seed, call, err)
				}
				var sealed []string
				for d, pe := range s.st.Promoted {
					if fi, err := os.Lstat(filepath.Join(lower, d)); pe.Sealed && err == nil && fi.IsDir() {
						sealed = append(sealed, d)
					}
				}
				sort.Strings(sealed)
				if len(sealed) > 0 && len(moved) < 3 {
					u, d := fmt.Sprintf("U%d", len(moved)), sealed[r.Intn(len(sealed))]
					if err := os.Rename(filepath.Join(old, u), filepath.Join(lower, d, u)); err != nil {
						t.Fatal(err)
					}
					moved[u] = d
					ops = append(ops, fmt.Sprintf("after call %d: the user moves %s into %s", call, u, d))
				}
			}
			for u, d := range moved {
				if pe, ok := s.st.Promoted[d]; ok && !pe.Sealed {
					continue // unsealed: the sandbox saw it since
				}
				for f, want := range map[string]string{"notes.txt": "user " + u[1:], "sub/deep.txt": "deep " + u[1:]} {
					if got := readOr(filepath.Join(lower, d, u, f)); got != want {
						t.Errorf("seed %d (AGENTBOX_MOVEDIN_SEED=%d): the user's %s/%s/%s (moved into a sealed directory) is %q\nops:\n  %s", seed, seed, d, u, f, got, strings.Join(ops, "\n  "))
					}
				}
			}
		})
	}
}

// genSession starts a generated session: a random workspace older than
// the session (and whatever before makes, older too), mounted under a
// real kernel overlay, and its stage.
func genSession(t *testing.T, seed int64, before func()) (*rand.Rand, string, string, *Stage) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	lower, upper, state := stageDirs(t, nil)
	genLower(r, lower)
	if before != nil {
		before()
	}
	fsclock.Tick(t, lower)
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, lower, merged, s
}
