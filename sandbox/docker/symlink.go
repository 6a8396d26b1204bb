package docker

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
)

// maxLinkHops is the kernel's own bound on symbolic links in one lookup.
const maxLinkHops = 40

// resolveInside resolves the workspace path rel (whose last element is a
// symbolic link) as the sandbox sees it: /workspace is the workspace root,
// every link is resolved by hand, one component at a time, and never
// followed on the host. It returns the path it resolves to (relative, with
// no link in any component) when that path exists inside the workspace;
// ok is false when it leads outside (the sandbox reaches only its own
// image there, never the host), nowhere, or to the workspace root itself.
func resolveInside(ws, rel string) (target string, dir bool, ok bool) {
	var cur []string
	rest := strings.Split(rel, "/")
	hops := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "", false, false // above /workspace
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := append(append([]string(nil), cur...), c)
		fi, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(strings.Join(next, "/"))))
		if err != nil {
			return "", false, false
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.IsDir() && len(rest) > 0 {
				return "", false, false
			}
			cur = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", false, false
		}
		t, err := os.Readlink(filepath.Join(ws, filepath.FromSlash(strings.Join(next, "/"))))
		if err != nil || t == "" {
			return "", false, false
		}
		if path.IsAbs(t) {
			t = path.Clean(t)
			inner, inside := strings.CutPrefix(t, sandbox.WorkspaceDir)
			if !inside || inner != "" && !strings.HasPrefix(inner, "/") {
				return "", false, false // the sandbox's own image, not the host
			}
			cur = nil
			t = strings.TrimPrefix(inner, "/")
		}
		rest = append(strings.Split(t, "/"), rest...)
	}
	if len(cur) == 0 {
		return "", false, false
	}
	target = strings.Join(cur, "/")
	fi, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(target)))
	if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		return "", false, false
	}
	return target, fi.IsDir(), true
}
