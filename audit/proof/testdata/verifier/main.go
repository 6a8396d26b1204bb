// Command verifier checks agentbox audit checkpoints and proofs using only
// golang.org/x/mod (no agentbox code): it is what an outside party runs.
//
//	verifier -vkey KEY -checkpoint C -proof P [-record LINEFILE]   inclusion
//	verifier -vkey KEY -checkpoint NEW -old OLD -proof P           consistency
//	verifier -vkey KEY -checkpoint C -log FILE                     the log's first N lines hash to the root
//
// Exit 0: accepted; 1: rejected (the reason on stderr).
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

func main() {
	vkey := flag.String("vkey", "", "verifier key")
	cpFile := flag.String("checkpoint", "", "signed checkpoint")
	oldFile := flag.String("old", "", "older signed checkpoint (consistency)")
	proofFile := flag.String("proof", "", "proof")
	recordFile := flag.String("record", "", "the record's line, to check the proof is about it")
	logFile := flag.String("log", "", "the log, to recompute the root")
	flag.Parse()
	if err := run(*vkey, *cpFile, *oldFile, *proofFile, *recordFile, *logFile); err != nil {
		fmt.Fprintln(os.Stderr, "REJECTED:", err)
		os.Exit(1)
	}
	fmt.Println("OK")
}

// open checks the note's signature and parses origin, size, root.
func open(vkey, file string) (int64, tlog.Hash, error) {
	msg, err := os.ReadFile(file)
	if err != nil {
		return 0, tlog.Hash{}, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return 0, tlog.Hash{}, err
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return 0, tlog.Hash{}, err
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 {
		return 0, tlog.Hash{}, fmt.Errorf("not a checkpoint")
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		return 0, tlog.Hash{}, err
	}
	root, err := tlog.ParseHash(lines[2])
	return size, root, err
}

func hashes(lines []string) ([]tlog.Hash, error) {
	var out []tlog.Hash
	for _, l := range lines {
		h, err := tlog.ParseHash(l)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

func run(vkey, cpFile, oldFile, proofFile, recordFile, logFile string) error {
	size, root, err := open(vkey, cpFile)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if logFile != "" {
		b, err := os.ReadFile(logFile)
		if err != nil {
			return err
		}
		var stored []tlog.Hash
		r := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
			out := make([]tlog.Hash, len(idx))
			for i, x := range idx {
				out[i] = stored[x]
			}
			return out, nil
		})
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<30)
		var n int64
		for sc.Scan() && n < size {
			hs, err := tlog.StoredHashes(n, sc.Bytes(), r)
			if err != nil {
				return err
			}
			stored = append(stored, hs...)
			n++
		}
		if n < size {
			return fmt.Errorf("the log has %d lines, the checkpoint %d", n, size)
		}
		th, err := tlog.TreeHash(size, r)
		if err != nil {
			return err
		}
		if th != root {
			return fmt.Errorf("the log's first %d lines do not hash to the checkpoint's root", size)
		}
		return nil
	}
	pb, err := os.ReadFile(proofFile)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimRight(string(pb), "\n"), "\n")
	a, err1 := strconv.ParseInt(lines[0], 10, 64)
	b, err2 := strconv.ParseInt(lines[1], 10, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("bad proof header")
	}
	if oldFile != "" { // consistency: old size, new size, hashes
		oldSize, oldRoot, err := open(vkey, oldFile)
		if err != nil {
			return fmt.Errorf("old checkpoint: %w", err)
		}
		p, err := hashes(lines[2:])
		if err != nil {
			return err
		}
		if a != oldSize || b != size {
			return fmt.Errorf("proof sizes %d,%d do not match the checkpoints %d,%d", a, b, oldSize, size)
		}
		return tlog.CheckTree(p, size, root, oldSize, oldRoot)
	}
	// inclusion: tree size, leaf index, record hash, hashes
	hs, err := hashes(lines[2:])
	if err != nil || len(hs) == 0 {
		return fmt.Errorf("bad proof hashes")
	}
	if a != size {
		return fmt.Errorf("proof for %d records, checkpoint of %d", a, size)
	}
	if recordFile != "" {
		rec, err := os.ReadFile(recordFile)
		if err != nil {
			return err
		}
		if tlog.RecordHash(bytes.TrimSuffix(rec, []byte("\n"))) != hs[0] {
			return fmt.Errorf("the proof is not about this record")
		}
	}
	return tlog.CheckRecord(hs[1:], size, root, b, hs[0])
}
