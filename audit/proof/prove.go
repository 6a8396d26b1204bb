package proof

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
)

// Inclusion proves that a record is leaf Index of the tree of Size leaves.
type Inclusion struct {
	Size, Index int64
	Leaf        tlog.Hash // the record's hash (tlog.RecordHash of its line)
	Proof       tlog.RecordProof
}

// Consistency proves that the tree of Old leaves is a prefix of the tree
// of New leaves.
type Consistency struct {
	Old, New int64
	Proof    tlog.TreeProof
}

// ProveInclusion proves line (1-based) in the tree of size leaves.
func ProveInclusion(t *Tree, line, size int64) (Inclusion, error) {
	if line < 1 || line > size {
		return Inclusion{}, fmt.Errorf("proof: line %d is not in a tree of %d records", line, size)
	}
	if size > t.Size() {
		return Inclusion{}, fmt.Errorf("proof: the checkpoint counts %d records; the log has only %d (records were removed)", size, t.Size())
	}
	leaf, err := t.Leaf(line - 1)
	if err != nil {
		return Inclusion{}, err
	}
	p, err := tlog.ProveRecord(size, line-1, t.reader())
	if err != nil {
		return Inclusion{}, fmt.Errorf("proof: %w", err)
	}
	return Inclusion{Size: size, Index: line - 1, Leaf: leaf, Proof: p}, nil
}

// ProveConsistency proves the tree of old leaves is a prefix of the tree
// of new leaves.
func ProveConsistency(t *Tree, old, new int64) (Consistency, error) {
	if old < 1 || old > new || new > t.Size() {
		return Consistency{}, fmt.Errorf("proof: no consistency proof from %d to %d records (the log has %d)", old, new, t.Size())
	}
	p, err := tlog.ProveTree(new, old, t.reader())
	if err != nil {
		return Consistency{}, fmt.Errorf("proof: %w", err)
	}
	return Consistency{Old: old, New: new, Proof: p}, nil
}

// String is the printed form: tree size, leaf index, the record's hash,
// then the proof hashes, one per line, base64.
func (p Inclusion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n%d\n%s\n", p.Size, p.Index, p.Leaf)
	for _, h := range p.Proof {
		fmt.Fprintf(&b, "%s\n", h)
	}
	return b.String()
}

// String is the printed form: old size, new size, then the proof hashes.
func (p Consistency) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\n%d\n", p.Old, p.New)
	for _, h := range p.Proof {
		fmt.Fprintf(&b, "%s\n", h)
	}
	return b.String()
}

// Check verifies the proof against a checkpoint's root.
func (p Inclusion) Check(c Checkpoint) error {
	if p.Size != c.Size {
		return fmt.Errorf("proof: the proof is for %d records, the checkpoint for %d", p.Size, c.Size)
	}
	if err := tlog.CheckRecord(p.Proof, p.Size, c.Root, p.Index, p.Leaf); err != nil {
		return fmt.Errorf("proof: record at line %d is NOT in the checkpointed log: %w", p.Index+1, err)
	}
	return nil
}

// Check verifies that old is a prefix of new.
func (p Consistency) Check(old, new Checkpoint) error {
	if p.Old != old.Size || p.New != new.Size {
		return fmt.Errorf("proof: the proof is from %d to %d records, the checkpoints are of %d and %d", p.Old, p.New, old.Size, new.Size)
	}
	if err := tlog.CheckTree(p.Proof, new.Size, new.Root, old.Size, old.Root); err != nil {
		return fmt.Errorf("proof: the newer checkpoint does NOT extend the older one: %w", err)
	}
	return nil
}

func parseLines(s string) ([]string, error) {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) < 2 {
		return nil, errors.New("proof: want at least two lines")
	}
	return lines, nil
}

func parseHashes(lines []string) ([]tlog.Hash, error) {
	var out []tlog.Hash
	for _, l := range lines {
		h, err := tlog.ParseHash(strings.TrimSpace(l))
		if err != nil {
			return nil, fmt.Errorf("proof: hash %q: %w", l, err)
		}
		out = append(out, h)
	}
	return out, nil
}

// ParseInclusion reads Inclusion.String's form.
func ParseInclusion(s string) (Inclusion, error) {
	lines, err := parseLines(s)
	if err != nil || len(lines) < 3 {
		return Inclusion{}, errors.New("proof: not an inclusion proof (want tree size, leaf index, record hash, proof hashes)")
	}
	size, err1 := strconv.ParseInt(lines[0], 10, 64)
	idx, err2 := strconv.ParseInt(lines[1], 10, 64)
	if err1 != nil || err2 != nil || idx < 0 || idx >= size {
		return Inclusion{}, fmt.Errorf("proof: bad tree size %q or leaf index %q", lines[0], lines[1])
	}
	hs, err := parseHashes(lines[2:])
	if err != nil {
		return Inclusion{}, err
	}
	return Inclusion{Size: size, Index: idx, Leaf: hs[0], Proof: hs[1:]}, nil
}

// ParseConsistency reads Consistency.String's form.
func ParseConsistency(s string) (Consistency, error) {
	lines, err := parseLines(s)
	if err != nil {
		return Consistency{}, err
	}
	old, err1 := strconv.ParseInt(lines[0], 10, 64)
	new, err2 := strconv.ParseInt(lines[1], 10, 64)
	if err1 != nil || err2 != nil || old < 1 || old > new {
		return Consistency{}, fmt.Errorf("proof: bad tree sizes %q, %q", lines[0], lines[1])
	}
	hs, err := parseHashes(lines[2:])
	if err != nil {
		return Consistency{}, err
	}
	return Consistency{Old: old, New: new, Proof: hs}, nil
}
