package batch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/workspace"
)

// Files written to OUTPUT/<id>/.
const (
	AnswerFile   = "answer.txt"
	LogFile      = "log.txt"
	ChangesFile  = "changes.json"  // manifest: every change, deleted files included
	PatchFile    = "changes.patch" // a git-style unified diff of the changes (text files)
	ResultFile   = "result.json"   // the task's results.jsonl line
	FilesDir     = "files"         // added and modified files, at their paths
	resultsName  = "results.jsonl"
	summaryName  = "summary.json"
	workDirName  = ".work"
	lockFileName = ".lock"
)

// exportChanges copies the files the task added or modified (found at
// their paths below changed: the copy's upper layer or tree) to
// outDir/files/<path> (symlinks as symlinks), writes the manifest of every
// change, deleted files included, and a unified diff against the task's
// workspace src.
func exportChanges(src, changed, outDir string, changes []audit.FileChange) error {
	if err := workspace.Export(changed, filepath.Join(outDir, FilesDir), workspace.Counted(changes)); err != nil {
		return err
	}
	if changes == nil {
		changes = []audit.FileChange{}
	}
	if err := writeJSON(filepath.Join(outDir, ChangesFile), changes); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(outDir, PatchFile))
	if err != nil {
		return fmt.Errorf("writing the patch: %w", err)
	}
	err = workspace.WritePatch(f, src, changed, changes)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeTaskFiles writes the answer and the log excerpt of a task.
func writeTaskFiles(outDir, answer, log string) error {
	if answer != "" && !strings.HasSuffix(answer, "\n") {
		answer += "\n"
	}
	if err := os.WriteFile(filepath.Join(outDir, AnswerFile), []byte(answer), 0o644); err != nil {
		return fmt.Errorf("writing the answer: %w", err)
	}
	if err := os.WriteFile(filepath.Join(outDir, LogFile), []byte(log), 0o644); err != nil {
		return fmt.Errorf("writing the log: %w", err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
