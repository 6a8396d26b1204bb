package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A keyed log never receives unkeyed records; an unkeyed log does not
// become keyed; a wrong key is refused. Each case: the writer is refused
// and the file is unchanged.
func TestKeyStateRefused(t *testing.T) {
	cases := []struct {
		name          string
		logKey, wrKey []byte
		want          error
	}{
		{"keyed log, no key", testKey, nil, ErrKeyRequired},
		{"unkeyed log, key", nil, testKey, ErrUnkeyedLog},
		{"keyed log, wrong key", testKey, []byte("another key entirely"), ErrKeyMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := sampleLog(t, Options{Key: c.logKey})
			before, _ := os.ReadFile(path)
			_, err := Open(path, Options{Key: c.wrKey})
			if !errors.Is(err, c.want) {
				t.Fatalf("Open: want %v, got %v", c.want, err)
			}
			if c.want == ErrKeyRequired && !strings.Contains(err.Error(), "set "+KeyEnv) {
				t.Fatalf("error does not say what to do: %v", err)
			}
			after, _ := os.ReadFile(path)
			if string(before) != string(after) {
				t.Fatal("the log changed")
			}
			if rep := verifyBytes(t, after, c.logKey, ""); !rep.Intact {
				t.Fatalf("%s", rep)
			}
		})
	}
	// The matching key, and an empty log with either, are fine.
	for _, k := range [][]byte{nil, testKey} {
		path := sampleLog(t, Options{Key: k})
		w, err := Open(path, Options{Key: k})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Append(&Record{Session: "s", Event: EventError, Error: "x"}); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
}

// Another process turns the log keyed after this writer opened it: the
// next Append is refused too (checked under the lock).
func TestKeyStateCheckedOnAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	plain, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	keyed, err := Open(path, Options{Key: testKey}) // empty log: either is fine
	if err != nil {
		t.Fatal(err)
	}
	defer keyed.Close()
	if err := keyed.Append(&Record{Session: "s", Event: EventError, Error: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := plain.Append(&Record{Session: "s", Event: EventError, Error: "second"}); !errors.Is(err, ErrKeyRequired) {
		t.Fatalf("want ErrKeyRequired, got %v", err)
	}
	if lines := readLines(t, path); len(lines) != 1 {
		t.Fatalf("%d lines", len(lines))
	}
}

// Issue 11 item 7: a log with more than one hard link is refused, at Open
// and when a link appears later.
func TestHardLinkedLogRefused(t *testing.T) {
	dir := t.TempDir()
	path := sampleLog(t, Options{})
	other := filepath.Join(dir, "other-name")
	if err := os.Link(path, other); err != nil {
		t.Skip("hard links not supported here:", err)
	}
	if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Fatalf("Open: %v", err)
	}
	if _, err := Open(other, Options{}); err == nil {
		t.Fatal("Open through the other name")
	}
	os.Remove(other)

	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := len(readLines(t, path))
	if err := os.Link(path, other); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(&Record{Session: "s", Event: EventError, Error: "x"}); err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Fatalf("Append: %v", err)
	}
	if after := len(readLines(t, path)); after != before {
		t.Fatalf("a record was written: %d -> %d", before, after)
	}
}
