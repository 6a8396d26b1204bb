package workspace

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// concrete turns a catalogue name into a path it matches (globs filled).
func concrete(name string) string {
	r := strings.NewReplacer("*", "x", "?", "x")
	out := r.Replace(name)
	for strings.Contains(out, "[") {
		i, j := strings.IndexByte(out, '['), strings.IndexByte(out, ']')
		c := out[i+1 : i+2]
		if c == "!" || c == "^" {
			c = "~"
		}
		out = out[:i] + c + out[j+1:]
	}
	return out
}

// variants are spellings of name a case-insensitive or normalising
// filesystem opens as name: upper case, title case, an HFS+-ignored code
// point inside, a trailing dot or space (NTFS).
func variants(name string) []string {
	dir, base := "", name
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		dir, base = name[:i+1], name[i+1:]
	}
	mid := len(base) / 2
	return []string{
		strings.ToUpper(name),
		dir + strings.ToUpper(base[:1]) + base[1:],
		dir + base[:mid] + "\u200c" + base[mid:],
		dir + base + "\ufeff",
		dir + base + ".",
		dir + base + " ",
	}
}

// Every name of every catalogue entry is held at the top, at depth and
// below it, in every spelling a case-insensitive host opens as it, by the
// entry's rule; a link or file where a name's directory goes is held.
func TestHostRunCatalogueEntries(t *testing.T) {
	for _, e := range HostRun.Entries {
		want := HazardHostRun
		if e.Rule == "git-repository" {
			want = HazardGitRepo
		}
		for _, n := range e.Expanded() {
			name := concrete(n)
			t.Run(e.Family+"/"+name, func(t *testing.T) {
				paths := append([]string{name, name + "/inner/file"}, variants(name)...)
				if e.At == "any" {
					paths = append(paths, "a/b/"+name, "deep/"+strings.ToUpper(name)+"/x")
				}
				for _, p := range paths {
					if rule, why := pathHazard(p, false); rule != want || why == "" {
						t.Errorf("%q: %q %q, want %s", p, rule, why, want)
					}
				}
				if i := strings.IndexByte(name, '/'); i > 0 {
					if e := HostRun.Match(name[:i], true, false); e == nil {
						t.Errorf("a link at %q (where %s's directory goes) is not held", name[:i], name)
					}
					if e := HostRun.Match(name[:i], false, false); e != nil && !strings.Contains(name[:i], ".git") {
						t.Errorf("the directory %q alone is held by %s", name[:i], e.Tool)
					}
				}
			})
		}
	}
}

// Ordinary project files people edit every day with agents are not
// host hazards, nor are instruction files (CLAUDE.md) or lookalikes.
func TestHostRunOrdinaryFiles(t *testing.T) {
	for _, p := range []string{"package.json", "pyproject.toml", "Makefile", "go.mod", "go.sum", "src/config.go",
		"README.md", "CLAUDE.md", "AGENTS.md", ".env.example", "docs/lefthook.md", "src/index.js", "config/app.yaml",
		"lefthook.go", "mise.go", ".gitignore", ".gitattributes", ".github/workflows/ci.yml", "Cargo.toml", "cargo/config.toml",
		"vscode/x", "my.git/x", "agentbox.yaml.bak", ".npmrc.example", "default.nix", ".python-version"} {
		if rule, why := pathHazard(p, false); rule != "" {
			t.Errorf("%s held: %s %s", p, rule, why)
		}
	}
	// The workspace's own repository: objects, refs, the index promoted,
	// config and hooks (in any spelling) held.
	for p, want := range map[string]string{".git/objects/ab/cd": "", ".git/refs/heads/main": "", ".git/index": "",
		".git/config": HazardGitOwn, ".GIT/config": HazardGitOwn, ".git\u200d/hooks/x": HazardGitOwn, ".git/Config": HazardGitOwn,
		".git/hooks/pre-commit": HazardGitOwn, "sub/.git/config": HazardGitRepo, "sub/.Git": HazardGitRepo, "GIT~1/config": HazardGitOwn,
		".git/objects/INFO/alternates": HazardGitOwn, ".git/objects/info/alternates": HazardGitOwn} {
		if rule, _ := pathHazard(p, true); rule != want {
			t.Errorf("own repository: %s = %q, want %q", p, rule, want)
		}
	}
}

// A catalogue that is not right does not load, and says where.
func TestHostRunCatalogueChecked(t *testing.T) {
	base := "families: [a]\nentries:\n  - {family: a, tool: t, names: [x], at: any, why: w"
	if _, err := parseCatalogue([]byte(base + "}\n")); err != nil {
		t.Fatalf("a good catalogue: %v", err)
	}
	for _, bad := range []string{
		"families: [a]\nentries:\n  - {family: b, tool: t, names: [x], at: any, why: w}\n",
		base + ", extra: 1}\n",
		"families: [a]\nentries:\n  - {family: a, tool: t, names: [x], at: somewhere, why: w}\n",
		"families: [a]\nentries:\n  - {family: a, tool: t, names: [\"[x\"], at: any, why: w}\n",
		"families: [a]\nentries:\n  - {family: a, tool: t, names: [/x], at: any, why: w}\n",
		"families: [a]\nentries:\n  - {family: a, tool: t, names: [x], at: any}\n",
		base + ", rule: other}\n",
	} {
		if _, err := parseCatalogue([]byte(bad)); err == nil {
			t.Errorf("accepted: %q", bad)
		}
	}
	root, err := parseCatalogue([]byte("families: [a]\nentries:\n  - {family: a, tool: t, names: [x.toml], at: root, why: w}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if root.Match("X.toml", false, false) == nil || root.Match("sub/x.toml", false, false) != nil {
		t.Error("at: root matches below the top, or not at the top")
	}
}

// README lists every family of the catalogue and every name in it.
func TestReadmeListsHostRunFamilies(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	i := strings.Index(readme, "<!-- host-run families -->")
	j := strings.Index(readme, "<!-- end host-run families -->")
	if i < 0 || j < i {
		t.Fatal("README has no host-run families section (<!-- host-run families --> ... <!-- end host-run families -->)")
	}
	sec := readme[i:j]
	for _, f := range HostRun.Families {
		if !strings.Contains(sec, "**"+f+"**") {
			t.Errorf("README's host-run families lack **%s**", f)
		}
	}
	for _, e := range HostRun.Entries {
		for _, n := range e.Names {
			if !strings.Contains(sec, "`"+n+"`") {
				t.Errorf("README's host-run families lack `%s` (%s)", n, e.Tool)
			}
		}
	}
}

// segMatch answers as path.Match does, for every pattern segment of the
// catalogue against names that share a prefix, a first byte, or none.
func TestSegMatchIsPathMatch(t *testing.T) {
	names := []string{"", ".", "a", "x", ".env", ".envrc", "env", "config", "settings.json", "*", "[", `\`, "é"}
	var pats []string
	for _, e := range HostRun.Entries {
		for _, p := range e.pats {
			for _, seg := range p {
				pats = append(pats, seg)
				names = append(names, seg, seg+"x", "x"+seg, strings.TrimSuffix(seg, "*")+"tail")
				if len(seg) > 1 {
					names = append(names, seg[:1], seg[:len(seg)-1])
				}
			}
		}
	}
	pats = append(pats, "", "*", "?", "[a-c]x", `\*`, `a\`, "é*")
	for _, p := range pats {
		for _, n := range names {
			want, _ := path.Match(p, n)
			if got := segMatch(p, n); got != want {
				t.Fatalf("segMatch(%q, %q) = %v, path.Match says %v", p, n, got, want)
			}
		}
	}
}

// The indexed Match finds the entry the catalogue's order finds, for
// every name of the catalogue at the top, deeper, as a prefix, and for
// ordinary paths.
func TestMatchIndexIsLinear(t *testing.T) {
	lin := *HostRun
	lin.byFirst, lin.globFirst = nil, nil
	paths := []string{"a", "src/main.go", ".git", ".git/config", "x/.git", "README.md", "a/b/c/d"}
	for _, e := range HostRun.Entries {
		for _, n := range e.Expanded() {
			c := concrete(n)
			paths = append(paths, c, "sub/"+c, "a/b/"+c, c+"/inner", strings.ToUpper(c), path.Dir(c), c+"x")
		}
	}
	for _, p := range paths {
		for _, leaf := range []bool{false, true} {
			for _, skip := range []bool{false, true} {
				if got, want := HostRun.Match(p, leaf, skip), lin.Match(p, leaf, skip); got != want {
					t.Fatalf("Match(%q, %v, %v) = %v, the catalogue's order finds %v", p, leaf, skip, got, want)
				}
			}
		}
	}
}
