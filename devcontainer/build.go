package devcontainer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// parseBuild reads "build": dockerfile and context relative to the
// devcontainer.json's directory, both inside the workspace.
func parseBuild(v json.RawMessage, dir, workspace string) (*Build, error) {
	var b struct {
		Dockerfile string            `json:"dockerfile"`
		Context    string            `json:"context"`
		Args       map[string]string `json:"args"`
		Target     string            `json:"target"`
		Options    []string          `json:"options"`
		CacheFrom  json.RawMessage   `json:"cacheFrom"`
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields() // fail closed on fields agentbox does not know
	if err := dec.Decode(&b); err != nil {
		return nil, refuse("build", "want an object with only dockerfile, context, args, target: "+err.Error())
	}
	if len(b.Options) > 0 {
		return nil, refuse("build.options", "docker build options are not passed")
	}
	if len(b.CacheFrom) > 0 {
		return nil, refuse("build.cacheFrom", "no registry is used for build caches")
	}
	if b.Dockerfile == "" {
		return nil, refuse("build.dockerfile", "missing")
	}
	if b.Context == "" {
		b.Context = "."
	}
	out := &Build{Args: map[string]string{}, Target: b.Target}
	var err error
	if out.Dockerfile, err = inside(workspace, dir, b.Dockerfile); err != nil {
		return nil, refuse("build.dockerfile", err.Error())
	}
	if out.Context, err = inside(workspace, dir, b.Context); err != nil {
		return nil, refuse("build.context", err.Error())
	}
	for k, val := range b.Args {
		if out.Args[k], err = expand(val); err != nil {
			return nil, refuse("build.args."+k, err.Error())
		}
	}
	return out, nil
}

// inside resolves rel against dir and insists the result (symlinks
// followed) stays inside the workspace: a build reads nothing else of the
// host.
func inside(workspace, dir, rel string) (string, error) {
	if filepath.IsAbs(rel) {
		return "", fmt.Errorf("%q: want a path relative to the devcontainer.json", rel)
	}
	p := filepath.Join(dir, rel)
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("%q: %w", rel, err)
	}
	ws, err := filepath.EvalSymlinks(workspace)
	if err != nil {
		return "", err
	}
	if real != ws && !strings.HasPrefix(real, ws+string(filepath.Separator)) {
		return "", fmt.Errorf("%q leaves the workspace", rel)
	}
	return real, nil
}
