package web

import (
	"fmt"
	"os"
	"time"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/audit/proof"
)

// FileVerdict is the verification verdict of one log.
type FileVerdict struct {
	Index    int            `json:"index"`
	Path     string         `json:"path"`
	Error    string         `json:"error,omitempty"` // the log could not be read
	Intact   bool           `json:"intact"`
	Records  int            `json:"records"`
	Sessions int            `json:"sessions"`
	Head     string         `json:"head"`
	Keyed    bool           `json:"keyed"`    // records carry MACs
	KeyUsed  bool           `json:"key_used"` // and they were checked
	Damage   []audit.Damage `json:"damage"`
	Count    int            `json:"damage_count"`
	Unended  []string       `json:"unended"`
	// Verified lists what the verification proved, Unproven what it
	// could not: together one statement (a checkpoint that verifies
	// narrows Unproven to what it does not cover).
	Verified []string `json:"verified"`
	Unproven string   `json:"unproven,omitempty"`
	// Checkpoint says whether the log still extends the signed
	// checkpoint given to the viewer (Options.Checkpoint), "" without one.
	Checkpoint   string `json:"checkpoint,omitempty"`
	CheckpointOK bool   `json:"checkpoint_ok"`
}

// checkCheckpoint compares the log with a signed checkpoint (C2SP note):
// its first N lines must hash to the checkpoint's root. It records the
// result in v and narrows v.Unproven to what the checkpoint leaves open.
func (v *FileVerdict) checkCheckpoint(note []byte, vkey string) {
	v.Checkpoint, v.CheckpointOK = v.checkpoint(note, vkey)
	if !v.CheckpointOK {
		v.Unproven = "" // the log fails the check: that is the statement
	}
}

func (v *FileVerdict) checkpoint(note []byte, vkey string) (string, bool) {
	cp, err := proof.Open(note, vkey)
	if err != nil {
		return "INVALID checkpoint: " + err.Error(), false
	}
	f, err := os.Open(v.Path)
	if err != nil {
		return err.Error(), false
	}
	defer f.Close()
	t, err := proof.ReadTree(f)
	if err != nil {
		return err.Error(), false
	}
	root, err := t.Root(cp.Size)
	switch {
	case err != nil:
		return fmt.Sprintf("NOT extended: the signed checkpoint (%s) counts %d records, the log has %d", cp.Origin, cp.Size, t.Size()), false
	case root != cp.Root:
		return fmt.Sprintf("NOT extended: the log's first %d lines no longer hash to the root signed by %s", cp.Size, cp.Origin), false
	}
	msg := fmt.Sprintf("extended: signed checkpoint of %s (%d records, root %s) verified; the log has %d", cp.Origin, cp.Size, cp.Root, t.Size())
	v.Verified = append(v.Verified, fmt.Sprintf("the first %d records are exactly those of the checkpoint signed by %s (root %s)", cp.Size, cp.Origin, short(cp.Root.String(), 16)))
	switch {
	case !v.Intact:
		// The damage is the statement.
	case v.KeyUsed:
		// The MACs already prove every record; nothing to narrow.
	case t.Size() > cp.Size:
		v.Unproven = fmt.Sprintf("records %d to %d came after the checkpoint: without a key nothing shows that they were not rewritten nor that records were cut from the end; sign a new checkpoint to cover them (agentbox audit checkpoint --sign-key)", cp.Size+1, t.Size())
	default:
		v.Unproven = "whether records written after the checkpoint was signed were cut from the end (sign checkpoints as the log grows: agentbox audit checkpoint --sign-key)"
	}
	return msg, true
}

func short(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func verifyFile(path string, key []byte) FileVerdict {
	v := FileVerdict{Path: path}
	f, err := os.Open(path)
	if err != nil {
		v.Error = err.Error()
		return v
	}
	defer f.Close()
	rep, err := audit.Verify(f, key, "")
	if err != nil {
		v.Error = err.Error()
		return v
	}
	v.Intact, v.Records, v.Sessions, v.Head = rep.Intact, rep.Records, rep.Sessions, rep.Head
	v.Keyed, v.KeyUsed, v.Damage, v.Count = rep.MACs > 0, rep.KeyUsed, rep.Damage, rep.DamageCount
	v.Unended, v.Unproven = rep.Unended, rep.Unproven
	if v.Damage == nil {
		v.Damage = []audit.Damage{}
	}
	v.Verified = []string{}
	if !v.Intact {
		// The damage is the statement; what a key or a checkpoint
		// would add does not matter for a log known to be altered.
		v.Unproven = ""
		return v
	}
	v.Verified = append(v.Verified, fmt.Sprintf("the hash chain of all %d records is intact", v.Records))
	if v.KeyUsed {
		v.Verified = append(v.Verified, "every record's MAC is valid: only a holder of the key wrote them")
	}
	return v
}

// Session is one row of the sessions list.
type Session struct {
	ID           string    `json:"id"`
	Status       string    `json:"status"` // "" while running or never ended
	Ended        bool      `json:"ended"`
	User         string    `json:"user"`
	Host         string    `json:"host"`
	Task         string    `json:"task"`
	TaskID       string    `json:"task_id,omitempty"`
	PolicyPath   string    `json:"policy_path"`
	PolicySHA256 string    `json:"policy_sha256"`
	Model        string    `json:"model"`
	Start        time.Time `json:"start"`
	Last         time.Time `json:"last"`
	ModelCalls   int       `json:"model_calls"`
	Calls        int       `json:"calls"`
	Denials      int       `json:"denials"`
	Alarms       int       `json:"alarms"`
	Net          int       `json:"net"`
	Files        int       `json:"files"`
}

func summarize(path string) ([]*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	by := map[string]*Session{}
	var order []*Session
	err = audit.Scan(f, func(_ int, rec audit.Record) error {
		s := by[rec.Session]
		if s == nil {
			s = &Session{ID: rec.Session, Start: rec.Time}
			by[rec.Session] = s
			order = append(order, s)
		}
		s.Last = rec.Time
		switch rec.Event {
		case audit.EventSessionStart:
			s.User, s.Host, s.Task, s.TaskID, s.Model = rec.User, rec.Host, rec.Task, rec.TaskID, rec.Model
			s.PolicyPath, s.PolicySHA256, s.Start = rec.PolicyPath, rec.PolicySHA256, rec.Time
		case audit.EventSessionEnd:
			s.Ended, s.Status, s.Files = true, rec.Status, audit.CountFiles(rec.Files)
		case audit.EventModelCall:
			s.ModelCalls++
			if s.Model == "" {
				s.Model = rec.Model
			}
		case audit.EventToolCall:
			if rec.Phase != audit.PhaseResult {
				s.Calls++
			}
			if rec.Decision == "deny" {
				s.Denials++
			}
		case audit.EventNet:
			s.Net++
			if rec.Decision == "deny" {
				s.Denials++
			}
		case audit.EventExecDenied:
			s.Denials++ // a program stopped at exec time
		case audit.EventAlarm:
			s.Alarms++
		}
		return nil
	})
	// Newest first.
	for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
		order[i], order[j] = order[j], order[i]
	}
	return order, err
}

// Line is a record with its line number, for the timeline.
type Line struct {
	Line int           `json:"line"`
	Rec  *audit.Record `json:"rec"`
}

func lineOf(n int, rec *audit.Record) Line { return Line{Line: n, Rec: rec} }

// records returns the records of one session ("" = all), in log order.
func records(path, session string) ([]Line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	out := []Line{}
	err = audit.Scan(f, func(n int, rec audit.Record) error {
		if session == "" || rec.Session == session {
			r := rec
			out = append(out, lineOf(n, &r))
		}
		return nil
	})
	return out, err
}
