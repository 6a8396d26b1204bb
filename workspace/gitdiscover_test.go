package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// treeOp is one entry the sandbox writes (or the workspace holds): a
// file ("file:CONTENT", "exec:CONTENT"), a directory ("dir"), a link
// ("link:TARGET") or a whiteout ("whiteout").
func plant(t *testing.T, root, p, op string) {
	t.Helper()
	full := filepath.Join(root, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	kind, arg, _ := strings.Cut(op, ":")
	var err error
	switch kind {
	case "file":
		err = os.WriteFile(full, []byte(arg), 0o644)
	case "exec":
		err = os.WriteFile(full, []byte(arg), 0o755)
	case "dir":
		err = os.MkdirAll(full, 0o755)
	case "link":
		err = os.Symlink(arg, full)
	case "whiteout":
		whiteout(t, root, p)
	default:
		t.Fatalf("unknown op %q", op)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// The shapes git accepts as a repository beyond HEAD + objects/ + refs/
// directories (the attack: links and executable files for
// objects and refs), in any spelling and any order across calls, are
// held; the workspace's own repository keeps working: logs/HEAD,
// refs/remotes/origin/HEAD, objects and refs are promoted, HEAD must be
// a ref.
func TestGitRepositoryShapes(t *testing.T) {
	const cfg = "file:[core]\n\tfsmonitor = touch /tmp/x\n"
	own := map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "", ".git/objects/": "", ".git/refs/heads/": ""}
	cases := []struct {
		name  string
		lower map[string]string
		calls []map[string]string // each call's writes
		held  []string            // held (in the last call that wrote them)
		ok    []string            // promoted
	}{
		{name: "links and executable files", calls: []map[string]string{{"o/": "", "src/HEAD": "file:ref: refs/heads/main\n",
			"src/config": cfg, "src/objects": "link:../o", "src/refs": "exec:"}},
			held: []string{"src/HEAD", "src/config", "src/objects", "src/refs"}, ok: []string{"o"}},
		{name: "HEAD last, across calls", calls: []map[string]string{{"src/objects": "link:../o", "o/": ""}, {"src/refs": "exec:"}, {"src/config": cfg}, {"src/HEAD": "file:0123456789abcdef0123456789abcdef01234567"}},
			held: []string{"src/config", "src/HEAD"}, ok: []string{"src/objects", "src/refs"}},
		{name: "HEAD first, across calls", calls: []map[string]string{{"src/HEAD": "link:refs/heads/main"}, {"src/config": cfg}, {"src/objects": "dir", "src/refs": "dir"}},
			held: []string{"src/HEAD", "src/config", "src/objects", "src/refs"}},
		{name: "an invalid HEAD, then objects", calls: []map[string]string{{"src/HEAD": "file:not a ref"}, {"src/objects": "dir"}},
			held: []string{"src/objects"}, ok: []string{"src/HEAD"}},
		{name: "case variants", calls: []map[string]string{{"src/head": "file:  REF: refs/heads/x", "src/Config": cfg, "src/OBJECTS/": "", "src/Refs/": ""}},
			held: []string{"src/head", "src/Config", "src/OBJECTS", "src/Refs"}},
		{name: "a HEAD the workspace already has", lower: map[string]string{"fixture/HEAD": "ref: refs/heads/main\n"},
			calls: []map[string]string{{"fixture/config": cfg, "fixture/objects/": "", "fixture/refs": "link:."}}, held: []string{"fixture/config", "fixture/objects", "fixture/refs"}},
		{name: "a common directory", calls: []map[string]string{{"c/objects/": "", "c/refs/": ""}, {"c/config": cfg}},
			held: []string{"c/config"}, ok: []string{"c/objects", "c/refs"}},
		{name: "commondir and gitfiles", calls: []map[string]string{{"w/commondir": "file:../c", "w/HEAD": "file:ref: refs/heads/main", "x/notgit": "file:gitdir: ../w\n", "y/.Git": "file:gitdir: ../w"}},
			held: []string{"w/commondir", "w/HEAD", "x/notgit", "y/.Git"}},
		{name: "at the root", calls: []map[string]string{{"HEAD": "file:ref: refs/heads/main", "objects": "exec:", "refs": "exec:", "config": cfg}},
			held: []string{"HEAD", "objects", "refs", "config"}},
		{name: "the own repository", lower: own, calls: []map[string]string{{".git/logs/HEAD": "file:0000000000000000000000000000000000000000 1111111111111111111111111111111111111111 me <m> 1 +0000\tcommit\n",
			".git/logs/refs/heads/main": "file:x", ".git/refs/remotes/origin/HEAD": "file:ref: refs/remotes/origin/main\n",
			".git/objects/ab/cd": "file:x", ".git/HEAD": "file:ref: refs/heads/other\n"}},
			ok: []string{".git/logs/HEAD", ".git/logs/refs/heads/main", ".git/refs/remotes/origin/HEAD", ".git/objects/ab/cd", ".git/HEAD"}},
		{name: "the own repository's HEAD", lower: own, calls: []map[string]string{{".git/HEAD": "file:[core]\n"}}, held: []string{".git/HEAD"}},
		{name: "the own repository's HEAD deleted", lower: own, calls: []map[string]string{{".git/HEAD": "whiteout"}}, held: []string{".git/HEAD"}},
		{name: "a repository inside the own one", lower: ownWith(own, ".git/logs/HEAD", "0000000000000000000000000000000000000000 1", ".git/logs/refs/heads/main", "x"), calls: []map[string]string{{".git/logs/objects/": "", ".git/refs/x/HEAD": "file:ref: refs/heads/main", ".git/refs/x/commondir": "file:../.."}},
			held: []string{".git/logs/objects", ".git/refs/x/HEAD", ".git/refs/x/commondir"}},
		{name: "a link or file where a catalogue directory goes", calls: []map[string]string{{".cargo": "link:elsewhere", "elsewhere/config.toml": "file:x", "a/.config": "file:x"}},
			held: []string{".cargo", "a/.config"}, ok: []string{"elsewhere/config.toml"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lower, upper, state := stageDirs(t, tc.lower)
			s, err := OpenStage(upper, lower, state, nil)
			if err != nil {
				t.Fatal(err)
			}
			held := map[string]string{}
			for i, call := range tc.calls {
				for p, op := range call {
					if strings.HasSuffix(p, "/") {
						op = "dir"
					}
					plant(t, upper, strings.TrimSuffix(p, "/"), op)
				}
				for p, r := range heldRules(mustPromote(t, s, string(rune('1'+i)))) {
					held[p] = r
				}
			}
			for _, p := range tc.held {
				if held[p] == "" {
					t.Errorf("%s promoted, want held; held: %v", p, held)
				}
			}
			for _, p := range tc.ok {
				if held[p] != "" {
					t.Errorf("%s held (%s), want promoted", p, held[p])
				}
			}
		})
	}
}

func ownWith(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}
