package executor

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentbox/agentbox/sandbox/wire"
)

// maxPath bounds request paths.
const maxPath = 4096

// relPath turns a request path into a clean path relative to root (the
// workspace), refusing paths that leave it.
func relPath(root, p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if len(p) > maxPath || strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("path is too long or contains NUL")
	}
	if path.IsAbs(p) {
		c := path.Clean(p)
		if c == root {
			return ".", nil
		}
		rest, ok := strings.CutPrefix(c, root+"/")
		if !ok {
			return "", fmt.Errorf("%q is outside %s", p, root)
		}
		return rest, nil
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%q is outside %s", p, root)
	}
	return c, nil
}

// resolvedRel returns where an open file really is, relative to the
// workspace, refusing anything outside it.
func resolvedRel(root string, f *os.File) (string, error) {
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return "", fmt.Errorf("resolving path: %w", err)
	}
	if strings.HasSuffix(real, " (deleted)") {
		return "", errors.New("the file was deleted while it was opened")
	}
	if real == root {
		return ".", nil
	}
	rest, ok := strings.CutPrefix(real, root+"/")
	if !ok {
		return "", fmt.Errorf("path resolves outside %s", root)
	}
	return rest, nil
}

func (s *Server) denied(req *wire.Request, resolved string) *wire.Response {
	if req.Rules == nil || s.Match == nil {
		return nil
	}
	if d, rule := s.Match(req.Rules.Allow, req.Rules.Deny, resolved, req.Write); d {
		return &wire.Response{Denied: true, Rule: rule, Resolved: []byte(resolved),
			Error: fmt.Sprintf("%q resolves to %q, which the policy denies (%s)", req.Path, resolved, rule)}
	}
	return nil
}

func errResp(format string, a ...any) *wire.Response {
	return &wire.Response{Error: fmt.Sprintf(format, a...)}
}

func (s *Server) readFile(req *wire.Request) *wire.Response {
	rel, err := relPath(s.root(), string(req.Path))
	if err != nil {
		return errResp("read_file: %v", err)
	}
	root, err := os.OpenRoot(s.root())
	if err != nil {
		return errResp("read_file: opening workspace: %v", err)
	}
	defer root.Close()
	if fi, err := root.Lstat(rel); err == nil && !fi.Mode().IsRegular() && fi.Mode()&fs.ModeSymlink == 0 {
		return errResp("read_file: %q is not a regular file (%s)", req.Path, typeName(fi.Mode()))
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return errResp("read_file: %v", cleanErr(s.root(), err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return errResp("read_file: %v", err)
	}
	if !fi.Mode().IsRegular() {
		return errResp("read_file: %q is not a regular file (%s)", req.Path, typeName(fi.Mode()))
	}
	resolved, err := resolvedRel(s.root(), f)
	if err != nil {
		return errResp("read_file: %v", err)
	}
	if d := s.denied(req, resolved); d != nil {
		return d
	}
	// Another name of the same file may be denied: a hard link is read
	// only through a name the rules are sure about, i.e. not at all.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 && req.Rules != nil && len(req.Rules.Deny) > 0 {
		return errResp("read_file: refusing to read %q: it is hard-linked (%d names) and another name may be denied; read it with execute_bash if the policy allows", req.Path, st.Nlink)
	}
	limit := req.Limit
	if limit <= 0 {
		if fi.Size()-req.Offset > wire.MaxFileBytes {
			return errResp("read_file: %q is %d bytes, over the %d-byte cap; read a part with offset and limit, or use execute_bash (head, grep)", req.Path, fi.Size(), wire.MaxFileBytes)
		}
		limit = wire.MaxFileBytes
	}
	limit = min(limit, wire.MaxFileBytes)
	if req.Offset < 0 {
		return errResp("read_file: negative offset")
	}
	buf, err := io.ReadAll(io.LimitReader(io.NewSectionReader(f, req.Offset, limit), limit))
	if err != nil {
		return errResp("read_file: %v", err)
	}
	sum := sha256.Sum256(buf)
	return &wire.Response{Content: buf, Size: fi.Size(), Resolved: []byte(resolved), SHA256: hex.EncodeToString(sum[:])}
}

func (s *Server) writeFile(req *wire.Request) *wire.Response {
	rel, err := relPath(s.root(), string(req.Path))
	if err != nil {
		return errResp("write_file: %v", err)
	}
	if rel == "." {
		return errResp("write_file: %q is the workspace directory", req.Path)
	}
	if len(req.Content) > wire.MaxFileBytes {
		return errResp("write_file: content over the %d-byte cap", wire.MaxFileBytes)
	}
	root, err := os.OpenRoot(s.root())
	if err != nil {
		return errResp("write_file: opening workspace: %v", err)
	}
	defer root.Close()
	dir, base := path.Split(rel)
	dir = path.Clean(dir)
	// Check where the path leads before creating anything: the deepest
	// directory that exists may be a symlink into a denied place.
	if dn := s.deniedAhead(req, root, dir, base); dn != nil {
		return dn
	}
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return errResp("write_file: creating %s: %v", dir, cleanErr(s.root(), err))
	}
	d, err := root.Open(dir)
	if err != nil {
		return errResp("write_file: %v", cleanErr(s.root(), err))
	}
	realDir, err := resolvedRel(s.root(), d)
	d.Close()
	if err != nil {
		return errResp("write_file: %v", err)
	}
	resolved := path.Join(realDir, base)
	if dn := s.denied(req, resolved); dn != nil {
		return dn
	}
	mode := fs.FileMode(0o644)
	if fi, err := root.Lstat(rel); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return errResp("write_file: refusing to write through the symlink %q; remove it first", req.Path)
		case !fi.Mode().IsRegular():
			return errResp("write_file: %q exists and is not a regular file (%s)", req.Path, typeName(fi.Mode()))
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
			return errResp("write_file: refusing to replace %q: it is hard-linked (%d names); remove it first if you mean to split it from its other names", req.Path, st.Nlink)
		}
		mode = fi.Mode().Perm()
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := path.Join(dir, ".agentbox-tmp-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return errResp("write_file: %v", cleanErr(s.root(), err))
	}
	_, werr := f.Write(req.Content)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = root.Remove(tmp)
		return errResp("write_file: %v", cleanErr(s.root(), werr))
	}
	sum := sha256.Sum256(req.Content)
	return &wire.Response{Size: int64(len(req.Content)), Resolved: []byte(resolved), SHA256: hex.EncodeToString(sum[:])}
}

func typeName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m&fs.ModeNamedPipe != 0:
		return "fifo"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "other"
}

// cleanErr rewords os.Root's escape error so the model understands it.
func cleanErr(root string, err error) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w (the path or a symlink in it leads outside %s)", err, root)
	}
	return err
}

// deniedAhead resolves the deepest existing ancestor of dir and checks the
// path the write would reach through it, so that a denied place gets no
// directories created in it either.
func (s *Server) deniedAhead(req *wire.Request, root *os.Root, dir, base string) *wire.Response {
	if req.Rules == nil || s.Match == nil {
		return nil
	}
	ancestor, rest := dir, ""
	for {
		if fi, err := root.Stat(ancestor); err == nil && fi.IsDir() {
			break
		}
		if ancestor == "." {
			return nil // nothing exists to resolve; MkdirAll will say why
		}
		rest = path.Join(path.Base(ancestor), rest)
		ancestor = path.Dir(ancestor)
	}
	d, err := root.Open(ancestor)
	if err != nil {
		return nil
	}
	real, err := resolvedRel(s.root(), d)
	d.Close()
	if err != nil {
		return errResp("write_file: %v", err)
	}
	return s.denied(req, path.Join(real, rest, base))
}
