package workspace

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentbox/agentbox/internal/testutil/fsclock"
)

// gitDiffSeeds are the seeds that found bugs: they run first, always.
var gitDiffSeeds = []uint64{}

// TestGitDifferential promotes generated trees (git's names as files,
// directories, links inside and out, executable files, gitfiles, case
// variants, commondir and worktree links; nested, at the top and deep;
// with and without the workspace's own repository; written over one to
// three calls in random order) with the real Stage, then runs the host's
// git (status, fetch) in every directory of the workspace, with the
// agent's config naming a command for core.fsmonitor, core.sshCommand,
// core.pager and hooks: none may run. The same tree written straight to
// a directory (no promotion) is the control: git must run the agent's
// command there for a good share of the trees, or the generator proves
// nothing. AGENTBOX_GITDIFF_TREES and AGENTBOX_GITDIFF_SEED change how
// many trees and from which seed.
func TestGitDifferential(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("the differential test needs the host's git: %v", err)
	}
	n, first := 120, uint64(1)
	if testing.Short() {
		n = 30
	}
	if v, err := strconv.Atoi(os.Getenv("AGENTBOX_GITDIFF_TREES")); err == nil {
		n = v
	}
	if v, err := strconv.ParseUint(os.Getenv("AGENTBOX_GITDIFF_SEED"), 10, 64); err == nil {
		first = v
	}
	seeds := append([]uint64{}, gitDiffSeeds...)
	for i := range n {
		seeds = append(seeds, first+uint64(i))
	}
	fired, ran := 0, 0
	for _, seed := range seeds {
		f, ok := gitDiffOne(t, seed)
		if !ok {
			return // reported; the seed reproduces it
		}
		ran++
		if f {
			fired++
		}
	}
	t.Logf("%d git runs", gitRuns)
	t.Logf("%d trees: git ran the agent's command in %d of the controls, in none of the promoted workspaces", ran, fired)
	if fired*6 < ran {
		t.Errorf("git ran the agent's command in only %d of %d controls: the generator no longer builds repositories git opens", fired, ran)
	}
}

// gitDiffOne runs one seed: whether the control fired, and false when the
// promoted workspace ran the agent's command (reported).
func gitDiffOne(t *testing.T, seed uint64) (controlFired, ok bool) {
	base := t.TempDir()
	marks := filepath.Join(base, "markers")
	g := genGitTree(rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), marks, filepath.Join(base, "ws"))
	lower, upper, state, control := filepath.Join(base, "ws"), filepath.Join(base, "upper"), filepath.Join(base, "state"), filepath.Join(base, "control")
	for _, d := range []string{lower, upper, control, marks, filepath.Join(base, "home")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range g.lower {
		plant(t, lower, o.path, o.op)
		plant(t, control, o.path, o.op)
	}
	fsclock.Tick(t, base)
	s, err := OpenStage(upper, lower, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	var held []string
	for i, call := range g.calls {
		for _, o := range call {
			plant(t, upper, o.path, o.op)
			if o.op == "whiteout" {
				_ = os.RemoveAll(filepath.Join(control, filepath.FromSlash(o.path)))
			} else {
				plant(t, control, o.path, o.op)
			}
		}
		cp, err := s.Promote(fmt.Sprint(i + 1))
		if err != nil {
			t.Fatalf("seed %d: promote: %v", seed, err)
		}
		for p, r := range heldRules(cp) {
			held = append(held, p+" ("+r+")")
		}
	}
	if where := gitEverywhere(t, base, lower, marks, "status", "fetch"); where != "" {
		t.Errorf("seed %d: host git ran the agent's command in %s\ntree: %s\nheld: %v", seed, where, g, held)
		return false, false
	}
	// The control: fetch reads the discovered repository's config as
	// status does, and runs core.sshCommand in a bare one too.
	return gitEverywhere(t, base, control, marks, "fetch") != "", true
}

// gitEverywhere runs git (status, fetch: cmds) in every directory below
// root (links not followed), as a user or a shell prompt would, with no
// global or system config and discovery stopped at base; it says where
// git left a marker ("" when nowhere), and clears them.
func gitEverywhere(t *testing.T, base, root, marks string, cmds ...string) string {
	t.Helper()
	home := filepath.Join(base, "home")
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_CEILING_DIRECTORIES=" + base, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}
	var where string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || where != "" {
			return nil
		}
		for _, c := range cmds {
			args := map[string][]string{"status": {"status", "--short"}, "fetch": {"fetch", "-q", "origin"}}[c]
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			cmd := exec.CommandContext(ctx, "git", args...)
			cmd.Dir, cmd.Env = p, env
			_ = cmd.Run()
			cancel()
			gitRuns++
			if ents, _ := os.ReadDir(marks); len(ents) > 0 {
				rel, _ := filepath.Rel(root, p)
				where = fmt.Sprintf("%s (git %s: %s)", rel, args[0], ents[0].Name())
				for _, e := range ents {
					_ = os.Remove(filepath.Join(marks, e.Name()))
				}
				return fs.SkipAll
			}
		}
		return nil
	})
	return where
}

type gitOp struct{ path, op string }

type gitTree struct {
	own   bool
	lower []gitOp
	calls [][]gitOp
	used  map[string]string
	marks string
}

func (g *gitTree) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "own .git: %v; workspace:", g.own)
	for _, o := range g.lower {
		fmt.Fprintf(&b, " %s=%q", o.path, o.op)
	}
	for i, c := range g.calls {
		fmt.Fprintf(&b, "; call %d:", i+1)
		for _, o := range c {
			fmt.Fprintf(&b, " %s=%q", o.path, o.op)
		}
	}
	return b.String()
}

// add puts an op in the workspace (call -1) or a call, unless its path, a
// parent or a child is taken already (no op writes through another's
// link or file).
func (g *gitTree) add(call int, p, op string) {
	if _, ok := g.used[p]; ok {
		return
	}
	for q, qop := range g.used {
		if strings.HasPrefix(p, q+"/") && qop != "dir" || strings.HasPrefix(q, p+"/") && op != "dir" {
			return
		}
	}
	g.used[p] = op
	if call < 0 {
		g.lower = append(g.lower, gitOp{p, op})
		return
	}
	g.calls[call] = append(g.calls[call], gitOp{p, op})
}

// genGitTree generates one tree; the agent's config names commands that
// leave a marker in marks.
func genGitTree(r *rand.Rand, marks, ws string) *gitTree {
	g := &gitTree{own: r.IntN(2) == 0, calls: make([][]gitOp, 1+r.IntN(3)), used: map[string]string{}, marks: marks}
	cfg := fmt.Sprintf("file:[core]\n\tfsmonitor = \"touch %[1]s/fsmonitor #\"\n\tsshCommand = \"touch %[1]s/ssh #\"\n"+
		"\tpager = \"touch %[1]s/pager #\"\n\thooksPath = hooks\n\tbare = false\n[remote \"origin\"]\n\turl = ssh://example.invalid/r\n", marks)
	call := func() int { return r.IntN(len(g.calls)) }
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	if g.own {
		for _, o := range []gitOp{{".git/HEAD", "file:ref: refs/heads/main\n"}, {".git/config", "file:[core]\n\trepositoryformatversion = 0\n"},
			{".git/objects", "dir"}, {".git/refs/heads", "dir"}, {"README", "file:hello\n"}} {
			g.add(-1, o.path, o.op)
		}
		if r.IntN(8) == 0 {
			g.add(call(), ".git/HEAD", pick("whiteout", "file:garbage", "link:refs/heads/main", "file:ref: refs/heads/other\n"))
		}
	}
	dirs := []string{".", "src", "a/b/c", "pkg/inner", "x.git", "deep/d/d/e", "sub"}
	if g.own {
		dirs = append(dirs, ".git", ".git/refs/x", ".git/logs", ".git/objects/zz", ".git/refs/remotes/origin")
	}
	for u := range 1 + r.IntN(3) {
		d := pick(dirs...)
		repo := d // where git's names go
		switch style := r.IntN(7); style {
		case 1, 2: // D/.git: a directory, a link to one, a gitfile (any spelling)
			other := fmt.Sprintf("r%d", u)
			dotgit := path.Join(d, pick(".git", ".git", ".git", ".GIT", ".git\u200c"))
			switch r.IntN(4) {
			case 0:
				g.add(call(), dotgit, "link:"+relTo(path.Dir(dotgit), other))
				repo = other
			case 1:
				g.add(call(), dotgit, "file:gitdir: "+pick(relTo(path.Dir(dotgit), other), filepath.Join(ws, other))+"\n")
				repo = other
			default:
				repo = dotgit
			}
		case 3: // a worktree: HEAD and commondir, the common directory elsewhere
			common := fmt.Sprintf("c%d", u)
			if g.own && r.IntN(2) == 0 {
				common = ".git"
			}
			g.add(pickCall(r, g, call), path.Join(d, "commondir"), "file:"+pick(relTo(d, common), filepath.Join(ws, common))+"\n")
			g.add(call(), path.Join(d, "HEAD"), "file:ref: refs/heads/main\n")
			g.add(call(), path.Join(d, ".git"), "file:gitdir: .\n")
			repo = common
		case 4: // a gitfile under another name, pointing at a repository
			g.add(call(), path.Join(d, "notes"), "file:gitdir: "+relTo(d, fmt.Sprintf("r%d", u))+"\n")
			repo = fmt.Sprintf("r%d", u)
		}
		g.addNames(r, repo, cfg, call, u)
	}
	return g
}

// pickCall chooses where a piece goes: now and then the workspace, as if
// the user's tree already had it (never the agent's config).
func pickCall(r *rand.Rand, g *gitTree, call func() int) int {
	if r.IntN(6) == 0 {
		return -1
	}
	return call()
}

// addNames writes git's names into dir in one of many forms.
func (g *gitTree) addNames(r *rand.Rand, dir, cfg string, call func() int, u int) {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	j := func(n string) string { return path.Join(dir, n) }
	if r.IntN(10) < 9 {
		name := pick("HEAD", "HEAD", "HEAD", "HEAD", "HEAD", "head")
		g.add(pickCall(r, g, call), j(name), pick("file:ref: refs/heads/main\n", "file:ref: refs/heads/main\n", "file:ref:refs/heads/x",
			"file:0123456789abcdef0123456789abcdef01234567\n", "link:refs/heads/main", "file:garbage", "dir"))
	}
	for _, n := range []string{"objects", "refs"} {
		target := fmt.Sprintf("t%d%s", u, n)
		name := n
		if r.IntN(10) == 0 {
			name = strings.ToUpper(n)
		}
		switch r.IntN(9) {
		case 0, 1, 2, 7, 8:
			g.add(pickCall(r, g, call), j(name), "dir")
		case 3:
			g.add(pickCall(r, g, call), target, "dir")
			g.add(pickCall(r, g, call), j(name), "link:"+relTo(dir, target))
		case 4:
			g.add(call(), j(name), "link:/tmp")
		case 5:
			g.add(pickCall(r, g, call), j(name), "exec:")
		case 6:
			g.add(pickCall(r, g, call), j(name), "file:")
		}
	}
	if r.IntN(10) < 9 {
		g.add(call(), j(pick("config", "config", "config", "config", "config", "config", "CONFIG", "config.worktree")), cfg)
	}
	if r.IntN(4) == 0 {
		g.add(call(), j("hooks/post-checkout"), "exec:#!/bin/sh\ntouch "+g.marks+"/hook\n")
	}
}

// relTo is the relative path from dir to target (both workspace-relative).
func relTo(dir, target string) string {
	rel, err := filepath.Rel(filepath.Join("/w", dir), filepath.Join("/w", target))
	if err != nil {
		return target
	}
	return filepath.ToSlash(rel)
}

var gitRuns int
