package audit

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// CheckpointVersion is the value of Checkpoint.V.
const CheckpointVersion = 1

// Checkpoint vouches for a log's state at one time: how many lines it had
// and the hash of the last one (its head). Stored elsewhere, it lets a
// later VerifyWith prove that the log still extends that state: nothing up
// to that line was rewritten and nothing was cut from its end. With a key
// the checkpoint itself carries an HMAC, so it cannot be forged either.
type Checkpoint struct {
	V       int       `json:"agentbox_checkpoint"`
	Records int64     `json:"records"` // lines of the log
	Head    string    `json:"head"`    // sha256 hex of line Records
	Time    time.Time `json:"time"`
	Keyed   bool      `json:"keyed"` // the log's MACs were checked when it was taken
	MAC     string    `json:"mac,omitempty"`
}

// NewCheckpoint returns the checkpoint of a verified log, signed with key
// when set. It refuses a damaged or empty log: a checkpoint would vouch for
// the damage.
func NewCheckpoint(rep VerifyReport, key []byte, now time.Time) (Checkpoint, error) {
	if !rep.Intact {
		return Checkpoint{}, fmt.Errorf("audit: the log is damaged (%s); a checkpoint would vouch for the damage: fix or set it aside first", rep.First)
	}
	if rep.Records == 0 || rep.Head == "" {
		return Checkpoint{}, errors.New("audit: the log is empty; there is nothing to checkpoint")
	}
	c := Checkpoint{V: CheckpointVersion, Records: int64(rep.Records), Head: rep.Head, Time: now.UTC().Truncate(time.Microsecond), Keyed: rep.KeyUsed}
	if len(key) > 0 {
		c.MAC = c.sign(key)
	}
	return c, nil
}

// String is the checkpoint as one line of JSON, the form ParseCheckpoint
// reads.
func (c Checkpoint) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// ParseCheckpoint reads a checkpoint printed by Checkpoint.String.
func ParseCheckpoint(s string) (Checkpoint, error) {
	var c Checkpoint
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Checkpoint{}, fmt.Errorf("audit: not a checkpoint (want the line printed by agentbox audit checkpoint): %w", err)
	}
	return c, c.valid()
}

func (c Checkpoint) valid() error {
	h, err := hex.DecodeString(c.Head)
	switch {
	case c.V != CheckpointVersion:
		return fmt.Errorf("audit: checkpoint version %d; this agentbox reads version %d", c.V, CheckpointVersion)
	case c.Records < 1:
		return errors.New("audit: checkpoint counts no records")
	case err != nil || len(h) != sha256.Size:
		return fmt.Errorf("audit: checkpoint head %q is not a sha256 hex digest", c.Head)
	case c.MAC != "" && len(c.MAC) != 64:
		return fmt.Errorf("audit: checkpoint mac %q is not an HMAC-SHA256 hex digest", c.MAC)
	}
	return nil
}

// sign returns hex(HMAC-SHA256(key, canonical form)).
func (c Checkpoint) sign(key []byte) string {
	var b bytes.Buffer
	b.WriteString("agentbox-checkpoint\n")
	b.WriteString(strconv.Itoa(c.V) + "\n")
	b.WriteString(strconv.FormatInt(c.Records, 10) + "\n")
	b.WriteString(c.Head + "\n")
	b.WriteString(c.Time.UTC().Format(TimeFormat) + "\n")
	b.WriteString(strconv.FormatBool(c.Keyed))
	m := hmac.New(sha256.New, key)
	m.Write(b.Bytes())
	return hex.EncodeToString(m.Sum(nil))
}

// checkMAC returns why the checkpoint cannot be trusted with key, or "".
func (c Checkpoint) checkMAC(key []byte) string {
	switch {
	case len(key) == 0 || c.MAC == "":
		return ""
	case !hmac.Equal([]byte(c.sign(key)), []byte(strings.ToLower(c.MAC))):
		return "the checkpoint's MAC does not match: it was forged or altered (or the key is wrong)"
	}
	return ""
}

// signedText says how far the checkpoint itself can be trusted.
func (c Checkpoint) signedText(keyGiven bool) string {
	switch {
	case c.MAC == "":
		return "unsigned checkpoint: trust it as far as the place it was kept"
	case keyGiven:
		return "checkpoint MAC valid"
	}
	return "signed checkpoint, MAC not checked: no key given"
}
