// Package importcheck checks the grouping of Go imports the way the
// project writes them (goimports' convention): the standard library in the
// first group, other modules in groups after it, never the two mixed in
// one group. `make lint` runs it (go run ./internal/importcheck).
package importcheck

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
)

// Problem is one import out of place.
type Problem struct {
	Pos  token.Position
	Path string
	Why  string
}

func (p Problem) String() string { return fmt.Sprintf("%s: import %q %s", p.Pos, p.Path, p.Why) }

// isStd reports whether an import path is the standard library's: its
// first element has no dot.
func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// File checks the imports of one Go source.
func File(name string, src []byte) ([]Problem, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	var out []Problem
	// Walk the import specs in order; a blank line between two specs of
	// one declaration starts a new group.
	type spec struct {
		path string
		pos  token.Pos
	}
	var groups [][]spec
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		groups = append(groups, nil) // each declaration is a group of its own
		lastLine := -2
		for i, sp := range gd.Specs {
			is := sp.(*ast.ImportSpec)
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				continue
			}
			start := fset.Position(is.Pos()).Line
			if is.Doc != nil {
				start = fset.Position(is.Doc.Pos()).Line
			}
			if i > 0 && start > lastLine+1 {
				groups = append(groups, nil)
			}
			groups[len(groups)-1] = append(groups[len(groups)-1], spec{p, is.Pos()})
			lastLine = fset.Position(is.End()).Line
		}
	}
	seenOther := false
	for _, g := range groups {
		std, other := 0, 0
		for _, s := range g {
			if isStd(s.path) {
				std++
			} else {
				other++
			}
		}
		for _, s := range g {
			switch {
			case !isStd(s.path) && std > 0:
				out = append(out, Problem{fset.Position(s.pos), s.path, "is in the standard library's group: put other modules' imports in a group after it"})
			case isStd(s.path) && other == 0 && seenOther:
				out = append(out, Problem{fset.Position(s.pos), s.path, "comes after other modules' imports: the standard library's group goes first"})
			}
		}
		if other > 0 {
			seenOther = true
		}
	}
	return out, nil
}

// Tree checks every .go file under root, skipping testdata, vendor and
// hidden directories.
func Tree(root string, read func(string) ([]byte, error)) ([]Problem, error) {
	var out []Problem
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := read(path)
		if err != nil {
			return err
		}
		ps, err := File(path, src)
		if err != nil {
			return err
		}
		out = append(out, ps...)
		return nil
	})
	return out, err
}
