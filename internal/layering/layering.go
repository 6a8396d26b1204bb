// Package layering checks the module's package rules (docs/DESIGN.md,
// Architecture): engine SDKs are imported only by the backends and the
// listed exceptions, every other package is free of them down its whole
// dependency tree, and lower layers never depend on upper ones. The rules
// are data (rules.go); `make lint` runs the check (go run
// ./internal/layering/cmd), reading the packages from `go list -json`.
package layering

import (
	"fmt"
	"sort"
	"strings"
)

// Package is what the check needs of one package of the module: its
// import path and its imports and dependencies, test files excluded.
type Package struct {
	ImportPath string
	Imports    []string // direct imports
	Deps       []string // every package it depends on, transitively
}

// Rules are the package rules; paths of the module's packages are
// relative to its path ("sandbox/docker"), a trailing "/..." matching a
// package and everything under it.
type Rules struct {
	// EngineSDK are the import paths of engine SDKs (each with everything
	// under it).
	EngineSDK []string
	// EngineImporters may import an engine SDK, each with the reason.
	EngineImporters map[string]string
	// EngineUsers may depend on an engine SDK through an importer (the
	// CLI chooses the backend) without importing one, each with the reason.
	EngineUsers map[string]string
	// EngineFree must exist, import no engine SDK and depend on none:
	// named so that no exception can quietly cover them.
	EngineFree []string
	// Below lists, for a package pattern, the packages it must not
	// depend on (upper layers).
	Below map[string][]string
	// Arrows are known violations of Below ("from -> to"), each with
	// the reason and what removes it.
	Arrows map[string]string
}

// Problem is one broken rule.
type Problem struct {
	Package string // relative to the module
	Why     string
}

func (p Problem) String() string { return p.Package + ": " + p.Why }

// Check applies r to the module's packages (module is its path).
func Check(module string, pkgs []Package, r Rules) []Problem {
	var out []Problem
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		s, ok := strings.CutPrefix(p, module+"/")
		return s, ok
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		name, ok := rel(p.ImportPath)
		if !ok {
			continue
		}
		seen[name] = true
		_, importer := lookup(r.EngineImporters, name)
		_, user := lookup(r.EngineUsers, name)
		if !importer {
			if sdk := first(p.Imports, r.EngineSDK); sdk != "" {
				out = append(out, Problem{name, fmt.Sprintf("imports the engine SDK %s; only the backends (sandbox/docker, sandbox/kubernetes) may: reach the engine through sandbox.Runtime or an optional power of it (as sandbox.ImageBuilder), or list the package in EngineImporters with the reason", sdk)})
			}
		}
		if !importer && !user {
			if sdk := first(p.Deps, r.EngineSDK); sdk != "" {
				out = append(out, Problem{name, fmt.Sprintf("depends on the engine SDK %s (through %s); it must reach engines only through sandbox.Runtime: find the import with `go list -deps` and move the engine call behind an interface a backend implements", sdk, via(module, p, pkgs, r.EngineSDK))})
			}
		}
		for _, pat := range sortedKeys(r.Below) {
			if !match(pat, name) {
				continue
			}
			for _, up := range r.Below[pat] {
				if _, known := r.Arrows[name+" -> "+strings.TrimSuffix(up, "/...")]; known {
					continue
				}
				for _, d := range p.Deps {
					if dn, ok := rel(d); ok && match(up, dn) {
						out = append(out, Problem{name, fmt.Sprintf("depends on %s, a layer above it (%s must not depend on %s): invert the dependency with an interface the lower package owns", dn, pat, up)})
						break
					}
				}
			}
		}
	}
	for _, name := range r.EngineFree {
		if !seen[name] {
			out = append(out, Problem{name, "is named in EngineFree but is not a package of the module: update the rules"})
		}
		if why, ok := lookup(r.EngineImporters, name); ok {
			out = append(out, Problem{name, "must be engine-free but is listed as an engine importer (" + why + ")"})
		}
		if why, ok := lookup(r.EngineUsers, name); ok {
			out = append(out, Problem{name, "must be engine-free but is listed as an engine user (" + why + ")"})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Package < out[j].Package })
	return out
}

// match reports whether the package name is pat or, for "x/...", x or
// under it.
func match(pat, name string) bool {
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return name == base || strings.HasPrefix(name, base+"/")
	}
	return name == pat
}

// lookup finds the entry of m whose pattern matches name.
func lookup(m map[string]string, name string) (string, bool) {
	for pat, why := range m {
		if match(pat, name) {
			return why, true
		}
	}
	return "", false
}

// first is the first path of paths under one of roots, or "".
func first(paths, roots []string) string {
	for _, p := range paths {
		for _, r := range roots {
			if p == r || strings.HasPrefix(p, r+"/") {
				return p
			}
		}
	}
	return ""
}

// via names the module's packages among p's dependencies that import an
// engine SDK themselves: where the dependency comes in.
func via(module string, p Package, pkgs []Package, sdk []string) string {
	deps := map[string]bool{}
	for _, d := range p.Deps {
		deps[d] = true
	}
	var names []string
	for _, q := range pkgs {
		if deps[q.ImportPath] && strings.HasPrefix(q.ImportPath, module+"/") && first(q.Imports, sdk) != "" {
			names = append(names, strings.TrimPrefix(q.ImportPath, module+"/"))
		}
	}
	if len(names) == 0 {
		return "a dependency outside the module"
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
