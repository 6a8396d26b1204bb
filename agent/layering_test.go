package agent_test

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// module is the import path of the module's root (go.mod).
const module = "github.com/agentbox/agentbox"

// moduleImports walks the module's packages pkg imports, directly or
// through other packages of the module (test files aside), and returns
// each with the package it was first seen imported by. Only the module's
// own packages can lead back to one of its packages.
func moduleImports(t *testing.T, pkg string) map[string]string {
	t.Helper()
	root := ".." // this test runs in agent/
	seen := map[string]string{pkg: ""}
	for queue := []string{pkg}; len(queue) > 0; queue = queue[1:] {
		p := queue[0]
		bp, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(p, module)), 0)
		if err != nil {
			t.Fatalf("reading the imports of %s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if _, ok := seen[imp]; !ok {
				seen[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return seen
}

// workspaceIn returns the import chains in seen that end in workspace or
// one of its subpackages.
func workspaceIn(seen map[string]string) []string {
	var chains []string
	for p := range seen {
		if p != module+"/workspace" && !strings.HasPrefix(p, module+"/workspace/") {
			continue
		}
		chain := p
		for by := seen[p]; by != ""; by = seen[by] {
			chain = by + " -> " + chain
		}
		chains = append(chains, chain)
	}
	return chains
}

// TestAgentDoesNotImportWorkspace: agent is the model loop and the tool
// pipeline; the staged workspace is the session's (docs/DESIGN.md,
// dependency direction). Neither agent nor anything of the module it
// imports may import workspace.
func TestAgentDoesNotImportWorkspace(t *testing.T) {
	seen := moduleImports(t, module+"/agent")
	if _, ok := seen[module+"/sandbox"]; !ok {
		t.Fatalf("the walk from agent did not reach sandbox (it found %d packages): it reads no imports", len(seen))
	}
	for _, chain := range workspaceIn(seen) {
		t.Errorf("%s: agent must not import workspace; move what needs it to session (the per-call step is agent.CallHook)", chain)
	}
}

// TestLayeringWalkFindsWorkspace: the walk sees workspace where it is
// imported (session), so the test above can fail.
func TestLayeringWalkFindsWorkspace(t *testing.T) {
	if chains := workspaceIn(moduleImports(t, module+"/session")); len(chains) == 0 {
		t.Fatal("the walk from session did not find workspace, which session imports")
	}
}
