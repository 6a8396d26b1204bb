package layering

import (
	"context"
	"os/exec"
	"strings"
	"testing"
)

const mod = "example.com/m"

// rules is a small rule set in the project's shape.
var rules = Rules{
	EngineSDK:       []string{"github.com/docker/docker", "k8s.io"},
	EngineImporters: map[string]string{"sandbox/docker": "the backend"},
	EngineUsers:     map[string]string{"cmd/...": "chooses the backend"},
	EngineFree:      []string{"batch", "devcontainer"},
	Below:           map[string][]string{"policy/...": {"session/..."}, "agent/...": {"workspace/..."}},
	Arrows:          map[string]string{"agent -> workspace": "known"},
}

// The tree as it should be: the backend imports the SDK, the CLI depends
// on it through the backend, the rest is engine-free and layered.
func good() []Package {
	return []Package{
		{ImportPath: mod + "/sandbox/docker", Imports: []string{"context", "github.com/docker/docker/client"}, Deps: []string{"context", "github.com/docker/docker/client"}},
		{ImportPath: mod + "/cmd/app", Imports: []string{mod + "/sandbox/docker", mod + "/batch"}, Deps: []string{mod + "/sandbox/docker", "github.com/docker/docker/client", mod + "/batch", mod + "/devcontainer"}},
		{ImportPath: mod + "/batch", Imports: []string{mod + "/devcontainer"}, Deps: []string{mod + "/devcontainer"}},
		{ImportPath: mod + "/devcontainer", Imports: []string{"io"}, Deps: []string{"io"}},
		{ImportPath: mod + "/policy", Imports: []string{"strings"}, Deps: []string{"strings"}},
		{ImportPath: mod + "/agent", Imports: []string{mod + "/workspace"}, Deps: []string{mod + "/workspace"}},
		{ImportPath: mod + "/workspace"},
		{ImportPath: mod + "/session", Imports: []string{mod + "/policy"}, Deps: []string{mod + "/policy", "strings"}},
	}
}

func TestGoodTreePasses(t *testing.T) {
	if ps := Check(mod, good(), rules); len(ps) != 0 {
		t.Fatalf("problems in a good tree: %v", ps)
	}
}

// Each way of breaking the rules is reported, naming the package and the
// rule.
func TestBrokenTreesFail(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(ps []Package) []Package
		want   []string // "package: fragment"
	}{
		{"devcontainer imports the Docker SDK", func(ps []Package) []Package {
			ps[3].Imports = append(ps[3].Imports, "github.com/docker/docker/api/types/build")
			ps[3].Deps = append(ps[3].Deps, "github.com/docker/docker/api/types/build")
			ps[2].Deps = append(ps[2].Deps, "github.com/docker/docker/api/types/build")
			return ps
		}, []string{
			"devcontainer: imports the engine SDK github.com/docker/docker/api/types/build",
			"devcontainer: depends on the engine SDK",
			"batch: depends on the engine SDK github.com/docker/docker/api/types/build (through devcontainer)",
		}},
		{"batch depends on a backend", func(ps []Package) []Package {
			ps[2].Imports = append(ps[2].Imports, mod+"/sandbox/docker")
			ps[2].Deps = append(ps[2].Deps, mod+"/sandbox/docker", "k8s.io/client-go", "github.com/docker/docker/client")
			return ps
		}, []string{"batch: depends on the engine SDK k8s.io/client-go (through sandbox/docker)"}},
		{"a lower layer depends on an upper one", func(ps []Package) []Package {
			ps[4].Deps = append(ps[4].Deps, mod+"/session")
			return ps
		}, []string{"policy: depends on session, a layer above it"}},
		{"an engine-free package is renamed away", func(ps []Package) []Package {
			return append(ps[:3], ps[4:]...)
		}, []string{"devcontainer: is named in EngineFree but is not a package of the module"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ps := Check(mod, c.mutate(good()), rules)
			var got []string
			for _, p := range ps {
				got = append(got, p.String())
			}
			if len(ps) != len(c.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(ps), len(c.want), strings.Join(got, "\n"))
			}
			for _, w := range c.want {
				found := false
				for _, g := range got {
					found = found || strings.HasPrefix(g, w)
				}
				if !found {
					t.Errorf("no problem %q in:\n%s", w, strings.Join(got, "\n"))
				}
			}
		})
	}
}

// An engine-free package listed as an exception is refused: the exception
// list cannot quietly cover what must stay engine-free.
func TestEngineFreeCannotBeExcepted(t *testing.T) {
	r := rules
	r.EngineImporters = map[string]string{"sandbox/docker": "the backend", "batch": "convenient"}
	ps := Check(mod, good(), r)
	if len(ps) != 1 || !strings.Contains(ps[0].String(), "batch: must be engine-free but is listed as an engine importer") {
		t.Fatalf("%v", ps)
	}
}

// A known violation is let through only while it is listed.
func TestArrowsExceptOnlyWhatTheyName(t *testing.T) {
	r := rules
	r.Arrows = nil
	ps := Check(mod, good(), r)
	if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), "agent: depends on workspace, a layer above it") {
		t.Fatalf("%v", ps)
	}
}

// The module itself keeps its rules: what `make lint` checks, also under
// go test. batch, devcontainer, agent, session, workspace, policy and
// audit have no engine SDK in `go list -deps`.
func TestModuleKeepsTheRules(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	module, pkgs, err := Load(context.Background(), "../..", "./...")
	if err != nil {
		t.Fatal(err)
	}
	if module != "github.com/agentbox/agentbox" || len(pkgs) < 20 {
		t.Fatalf("loaded %q with %d packages", module, len(pkgs))
	}
	for _, p := range Check(module, pkgs, Project) {
		t.Error(p)
	}
	for _, name := range []string{"batch", "devcontainer", "agent", "session", "workspace", "policy", "audit"} {
		found := false
		for _, f := range Project.EngineFree {
			found = found || f == name
		}
		if !found {
			t.Errorf("%s is not in Project.EngineFree", name)
		}
	}
}
