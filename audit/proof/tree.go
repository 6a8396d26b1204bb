package proof

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"golang.org/x/mod/sumdb/tlog"
)

// Tree is the Merkle tree of a log's lines.
type Tree struct {
	n      int64
	stored []tlog.Hash // tlog's stored hashes, by storage index
}

// Add appends one leaf: a line's bytes without its newline.
func (t *Tree) Add(line []byte) error {
	hs, err := tlog.StoredHashes(t.n, line, t.reader())
	if err != nil {
		return fmt.Errorf("proof: leaf %d: %w", t.n, err)
	}
	t.stored = append(t.stored, hs...)
	t.n++
	return nil
}

// Size is the number of leaves.
func (t *Tree) Size() int64 { return t.n }

func (t *Tree) reader() tlog.HashReader {
	return tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			if x < 0 || x >= int64(len(t.stored)) {
				return nil, fmt.Errorf("proof: no stored hash %d", x)
			}
			out[i] = t.stored[x]
		}
		return out, nil
	})
}

// Root returns the root hash of the tree's first n leaves.
func (t *Tree) Root(n int64) (tlog.Hash, error) {
	if n < 1 || n > t.n {
		return tlog.Hash{}, fmt.Errorf("proof: the log has %d records; no tree of size %d", t.n, n)
	}
	return tlog.TreeHash(n, t.reader())
}

// Leaf returns the hash of leaf i (0-based).
func (t *Tree) Leaf(i int64) (tlog.Hash, error) {
	if i < 0 || i >= t.n {
		return tlog.Hash{}, fmt.Errorf("proof: no record at line %d (the log has %d)", i+1, t.n)
	}
	return t.stored[tlog.StoredHashIndex(0, i)], nil
}

// ReadTree reads a log and returns the tree of its lines. A last line
// without a newline is a leaf too (verify reports it as truncated).
func ReadTree(r io.Reader) (*Tree, error) {
	t := &Tree{}
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if aerr := t.Add(bytes.TrimSuffix(line, []byte("\n"))); aerr != nil {
				return nil, aerr
			}
		}
		if errors.Is(err, io.EOF) {
			return t, nil
		}
		if err != nil {
			return nil, fmt.Errorf("proof: read log: %w", err)
		}
	}
}
