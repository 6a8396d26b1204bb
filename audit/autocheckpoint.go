package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentbox/agentbox/audit/proof"
)

// CheckpointKeyEnv names the signer key (or the file holding it) of the
// checkpoints written automatically (Options.Checkpoints).
const CheckpointKeyEnv = "AGENTBOX_CHECKPOINT_KEY"

// CheckpointKeyFromEnv returns the signer key CheckpointKeyEnv names.
func CheckpointKeyFromEnv() (string, error) {
	v := strings.TrimSpace(os.Getenv(CheckpointKeyEnv))
	if v == "" {
		return "", fmt.Errorf("audit.checkpoints is set but %s is not: set it to a signer key file (agentbox audit keygen NAME --out FILE)", CheckpointKeyEnv)
	}
	return proof.ReadKey(v)
}

// writeCheckpoint writes a signed checkpoint (C2SP note) of the whole log
// to dir as <tree size>.checkpoint; the writer's Close calls it. It reads
// the log from the start: its cost grows with the log.
func writeCheckpoint(logPath, dir, skey string) error {
	f, err := os.Open(logPath)
	if err != nil {
		return err
	}
	t, err := proof.ReadTree(f)
	f.Close()
	if err != nil || t.Size() == 0 {
		return err
	}
	note, err := proof.Sign(t, t.Size(), "", skey)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	name := filepath.Join(dir, fmt.Sprintf("%d.checkpoint", t.Size()))
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, note, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
