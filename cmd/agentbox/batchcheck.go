package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/agentbox/agentbox/batch"
	"github.com/agentbox/agentbox/policy"
)

// imageChecker is a backend that can tell whether an image is there
// before any sandbox starts.
type imageChecker interface {
	CheckImage(ctx context.Context, image string) error
}

// checkBatchImages checks every task's image before any task starts, so a
// missing image is one error (exit 125), not a failed task each.
func checkBatchImages(ctx context.Context, rt backend, def *policy.Policy, o batch.Overrides, tasks []batch.Task) error {
	seen := map[string]bool{}
	for i := range tasks {
		p := tasks[i].Policy
		if p == nil {
			p = def
		}
		cfg, _, err := batch.TaskSandbox(p, o, &tasks[i])
		if err != nil {
			return err
		}
		seen[cfg.Image] = true
	}
	ic, ok := rt.(imageChecker)
	if !ok {
		return nil
	}
	images := make([]string, 0, len(seen))
	for img := range seen {
		images = append(images, img)
	}
	sort.Strings(images)
	for _, img := range images {
		if err := ic.CheckImage(ctx, img); err != nil {
			return err
		}
	}
	return nil
}

// taskFileMark is the file in a batch's results directory that names the
// task file the results belong to (its sha256), so that --resume with
// another task file is refused.
const taskFileMark = "taskfile.sha256"

// checkResumeTaskFile refuses --resume with a task file other than the one
// the results directory was started with, and records the task file for a
// new results directory.
func checkResumeTaskFile(outDir, taskFile string, resume bool) error {
	data, err := os.ReadFile(taskFile)
	if err != nil {
		return exitWith(exitUsage, fmt.Errorf("task file: %w", err))
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	mark := filepath.Join(outDir, taskFileMark)
	if b, err := os.ReadFile(mark); err == nil {
		got, name, _ := strings.Cut(strings.TrimSpace(string(b)), "  ")
		if resume && got != want {
			return exitWith(exitUsage, fmt.Errorf("--resume: %s holds the results of another task file (%s, sha256 %.12s); %s has sha256 %.12s: resume with that file, or choose another --output", outDir, name, got, taskFile, want))
		}
		if resume {
			return nil
		}
	}
	if fi, err := os.Stat(filepath.Join(outDir, "results.jsonl")); err == nil && fi.Size() > 0 && !resume {
		return nil // batch.Run refuses it with its own message
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return exitWith(exitUsage, fmt.Errorf("results directory: %w", err))
	}
	abs, _ := filepath.Abs(taskFile)
	if err := os.WriteFile(mark, []byte(want+"  "+abs+"\n"), 0o644); err != nil {
		return exitWith(exitUsage, fmt.Errorf("results directory: %w", err))
	}
	return nil
}
