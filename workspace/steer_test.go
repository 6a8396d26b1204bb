package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A link is judged by where it resolves in the view the host will have,
// every link on the way followed: chains through links in the staged
// layer or in the workspace that leave it are held, links that stay
// inside are promoted. Each case runs through a real overlay.
func TestLinkJudgedByWhereItResolves(t *testing.T) {
	cases := []struct {
		name, script string
		held, kept   []string
	}{
		{"dot-chain", `ln -s . l1 && ln -s l1/l1/../../../etc esc`, []string{"esc"}, []string{"l1"}},
		{"chain-through-staged-link", `ln -s .. up && mkdir -p a && ln -s ../up/x a/esc`, []string{"up"}, []string{"a/esc"}}, // up held: a/esc dangles inside
		{"workspace-link-out", `ln -s user/out/passwd esc && ln -s user/out ok-name-only`, []string{"esc", "ok-name-only"}, nil},
		{"through-workspace-dir-link", `ln -s user/in/f good && ln -s userlink/../.. bad`, []string{"bad"}, []string{"good"}},
		{"deep-relative-chain", `mkdir -p a/b && ln -s ../.. a/b/top && ln -s a/b/top/a/b/top/a/b/top/x deep`, nil, []string{"a/b/top", "deep"}},
		{"chain-to-abs", `ln -s /etc z0 && ln -s z0 z1 && ln -s z1 z2`, []string{"z0"}, []string{"z1", "z2"}},
		// The directory replacing the workspace's link is held (files.write
		// denies it): the host keeps the link, so esc leaves through it.
		// (Held here by a rule, not by the session clock: a conflict
		// decided by a ctime tie made this case pass only on an idle host.)
		{"held-dir-reveals-workspace-link", `rm user/out && mkdir -p user/out/.git && echo x > user/out/.git/HEAD && ln -s user/out/f esc`, []string{"user/out", "esc"}, nil},
		{"loop", `ln -s m1 m0 && ln -s m0 m1`, []string{"m0"}, []string{"m1"}}, // more than 40 hops: held; then m1 dangles
	}
	// The paths files.write denies, per case.
	denies := map[string]string{"held-dir-reveals-workspace-link": "user/out"}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			outside := filepath.Join(base, "outside")
			put(t, outside, "passwd", "host")
			lower, upper, state := stageDirs(t, map[string]string{"user/in/f": "f"})
			if err := os.Symlink(outside, filepath.Join(lower, "user", "out")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("in", filepath.Join(lower, "userlink")); err != nil {
				t.Fatal(err)
			}
			merged := mountKernelOverlay(t, lower, upper)
			var decide WriteDecider
			if deny := denies[tc.name]; deny != "" {
				decide = func(rel string) (bool, string, bool) { return rel == deny, "files.write deny " + deny, rel == deny }
			}
			s, err := OpenStage(upper, lower, state, decide)
			if err != nil {
				t.Fatal(err)
			}
			sh(t, merged, tc.script)
			cp := mustPromote(t, s, "call-1")
			held := heldRules(cp)
			for _, p := range tc.held {
				if held[p] == "" {
					t.Errorf("%s promoted, want held (held: %v)", p, held)
				}
			}
			for _, p := range tc.kept {
				if held[p] != "" {
					t.Errorf("%s held (%s), want promoted", p, held[p])
				}
			}
			assertInside(t, lower, map[string]bool{"user/out": true})
		})
	}
}

// assertInside walks the workspace (no link followed) and checks that no
// entry but the allowed ones (the user's own links) resolves outside.
func assertInside(t *testing.T, ws string, allowed map[string]bool) {
	t.Helper()
	_ = filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == ws {
			return nil
		}
		rel, _ := filepath.Rel(ws, p)
		if allowed[filepath.ToSlash(rel)] {
			return nil
		}
		if r, err := filepath.EvalSymlinks(p); err == nil && r != ws && !strings.HasPrefix(r, ws+"/") {
			t.Errorf("%s resolves outside the workspace, to %s", rel, r)
		}
		return nil
	})
}

// The three-call attack: a link d into .git/hooks (promoted: inside);
// re-pointed outside (held: the record of what the workspace has at d
// stays); replaced by a directory with an executable pre-commit. Nothing
// reaches .git/hooks: the directory replaces the link, or is held with
// everything in it.
func TestHeldDirHoldsEverythingBelow(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/hooks/README": "r", ".git/objects/.keep": "", ".git/refs/heads/.keep": ""})
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `ln -s .git/hooks d`)
	cp := mustPromote(t, s, "call-1")
	if heldRules(cp)["d"] != "" {
		t.Fatalf("call 1: d held: %v", heldRules(cp))
	}
	sh(t, merged, `rm d && ln -s /etc d`)
	cp = mustPromote(t, s, "call-2")
	if heldRules(cp)["d"] != HazardSymlink {
		t.Fatalf("call 2: d not held as a link out: %v", heldRules(cp))
	}
	// As the overlay stages it (the view's cached d is stale once its
	// upper entry was scrubbed): a directory over the workspace's link.
	sh(t, upper, `mkdir d && printf '#!/bin/sh\ntouch /tmp/pwned\n' > d/pre-commit && chmod +x d/pre-commit`)
	cp = mustPromote(t, s, "call-3")
	if exists(filepath.Join(lower, ".git", "hooks", "pre-commit")) {
		t.Fatalf("d/pre-commit reached .git/hooks: %v", heldRules(cp))
	}
	if fi, err := os.Lstat(filepath.Join(lower, "d")); err == nil && fi.Mode()&os.ModeSymlink == 0 && heldRules(cp)["d/pre-commit"] != "" {
		t.Errorf("d promoted as a directory but d/pre-commit held: %v", heldRules(cp))
	}
	// The same with d held for another reason (policy): what is below is held.
	deny := func(rel string) (bool, string, bool) { return rel == "e", "files.write.deny[0]", false }
	s.Decide = deny
	sh(t, merged, `mkdir e && ln -s ../.git/hooks e/h && printf x > e/pre-commit && chmod +x e/pre-commit`)
	cp = mustPromote(t, s, "call-4")
	for _, p := range []string{"e/h", "e/pre-commit"} {
		if heldRules(cp)[p] != HazardParent {
			t.Errorf("%s: %q, want held with its parent", p, heldRules(cp)[p])
		}
	}
	if exists(filepath.Join(lower, "e")) {
		t.Error("the denied directory reached the workspace")
	}
}

// In the workspace's own .git, a symlink or special file is held at any
// path, also where git's own files are promoted (logs, refs, index, HEAD).
func TestOwnGitLinksHeld(t *testing.T) {
	lower, upper, state := stageDirs(t, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/objects/.keep": "", ".git/refs/heads/.keep": "", ".git/logs/.keep": ""})
	merged := mountKernelOverlay(t, lower, upper)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	sh(t, merged, `ln -s refs/heads/main .git/logs/HEAD && ln -s ../../index .git/refs/heads/x && rm .git/HEAD && ln -s refs/heads/main .git/HEAD && ln -s HEAD .git/ORIG_HEAD && mkfifo .git/index && echo ok > .git/FETCH_HEAD`)
	cp := mustPromote(t, s, "call-1")
	held := heldRules(cp)
	for _, p := range []string{".git/logs/HEAD", ".git/refs/heads/x", ".git/HEAD", ".git/ORIG_HEAD", ".git/index"} {
		if held[p] != HazardGitOwn {
			t.Errorf("%s: %q, want %s", p, held[p], HazardGitOwn)
		}
		if fi, err := os.Lstat(filepath.Join(lower, p)); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("%s is a link in the workspace", p)
		}
	}
	if held[".git/FETCH_HEAD"] != "" {
		t.Errorf(".git/FETCH_HEAD (a file) held: %v", held)
	}
}
