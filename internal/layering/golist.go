package layering

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// Load lists the packages matching patterns in the module at dir with
// `go list -json` (test files excluded) and returns them with the
// module's path.
func Load(ctx context.Context, dir string, patterns ...string) (string, []Package, error) {
	mod, err := goCmd(ctx, dir, "list", "-m")
	if err != nil {
		return "", nil, err
	}
	out, err := goCmd(ctx, dir, append([]string{"list", "-json=ImportPath,Imports,Deps,Error"}, patterns...)...)
	if err != nil {
		return "", nil, err
	}
	var pkgs []Package
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p struct {
			Package
			Error *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", nil, fmt.Errorf("reading go list's output: %w", err)
		}
		if p.Error != nil {
			return "", nil, fmt.Errorf("go list: %s: %s; fix the package first (go build ./...)", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p.Package)
	}
	return strings.TrimSpace(mod), pkgs, nil
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go %s: %w: %s; run it in the module's root with the go command on PATH", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
