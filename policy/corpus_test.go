package policy

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// sharedCorpus finds the public corpus beside the checkout: shared/corpus
// in the repository root's parent directory or above it (../shared/corpus
// for a checkout, ../../shared/corpus for a worktree under it). "" when
// there is none, as in a fresh clone.
func sharedCorpus(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(wd) // policy/ -> the repository root
	for dir := filepath.Dir(root); ; dir = filepath.Dir(dir) {
		c := filepath.Join(dir, "shared", "corpus")
		if fi, err := os.Stat(c); err == nil && fi.IsDir() {
			return c
		}
		if filepath.Dir(dir) == dir {
			return ""
		}
	}
}

// TestCorpusCopyIsCurrent fails when the public corpus beside the checkout
// differs from the repository's copy in testdata/corpus: copy it over
// (cp ../shared/corpus/* policy/testdata/corpus/) and commit.
func TestCorpusCopyIsCurrent(t *testing.T) {
	shared := sharedCorpus(t)
	if shared == "" {
		t.Skip("no shared/corpus beside the checkout; the repository's copy is used as is")
	}
	own := filepath.Join("testdata", "corpus")
	names := func(dir string) []string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	a, b := names(shared), names(own)
	if !slices.Equal(a, b) {
		t.Fatalf("%s holds %v, the copy in %s holds %v; copy it over: cp %s/* policy/testdata/corpus/", shared, a, own, b, shared)
	}
	for _, n := range a {
		x, err := os.ReadFile(filepath.Join(shared, n))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(own, n))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs from %s; copy it over: cp %s/* policy/testdata/corpus/", filepath.Join(own, n), filepath.Join(shared, n), shared)
		}
	}
}
