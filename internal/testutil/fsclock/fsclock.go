// Package fsclock lets a test wait for the filesystem clock (the ctime a
// new entry gets) to move, so that what it wrote before counts as older
// than what comes after: a session, a copy, a listing.
package fsclock

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Tick waits (polling, with a deadline) until the filesystem clock below
// dir has moved past every entry written there so far.
func Tick(t testing.TB, dir string) {
	t.Helper()
	first := probe(t, dir)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if probe(t, dir) > first {
			return
		}
	}
	t.Fatal("the filesystem clock did not move")
}

// probe is the filesystem clock now: the ctime of a new file in dir.
func probe(t testing.TB, dir string) int64 {
	t.Helper()
	p := filepath.Join(dir, ".fsclock")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	err := unix.Lstat(p, &st)
	_ = os.Remove(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Ctim.Nano()
}
