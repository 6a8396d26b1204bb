package proof

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is the body of a C2SP checkpoint: origin, tree size, root.
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Text is the checkpoint body: three lines, each ending in a newline.
func (c Checkpoint) Text() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, c.Root)
}

// ParseCheckpoint reads a checkpoint body (extension lines after the
// third are allowed and ignored, as C2SP says).
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.SplitN(text, "\n", 4)
	if len(lines) < 4 || lines[0] == "" {
		return Checkpoint{}, errors.New("proof: not a checkpoint (want origin, tree size and root hash lines)")
	}
	n, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil || n < 1 || lines[1] != strconv.FormatInt(n, 10) {
		return Checkpoint{}, fmt.Errorf("proof: checkpoint tree size %q is not a positive decimal", lines[1])
	}
	h, err := tlog.ParseHash(lines[2])
	if err != nil {
		return Checkpoint{}, fmt.Errorf("proof: checkpoint root hash %q: %w", lines[2], err)
	}
	return Checkpoint{Origin: lines[0], Size: n, Root: h}, nil
}

// Sign returns the checkpoint of the tree's first n leaves as a signed
// note; origin "" is the signer's key name.
func Sign(t *Tree, n int64, origin, skey string) ([]byte, error) {
	s, err := note.NewSigner(strings.TrimSpace(skey))
	if err != nil {
		return nil, fmt.Errorf("proof: signing key: %w (make one with: agentbox audit keygen NAME)", err)
	}
	root, err := t.Root(n)
	if err != nil {
		return nil, err
	}
	if origin == "" {
		origin = s.Name()
	}
	if strings.ContainsAny(origin, "\n") {
		return nil, errors.New("proof: the origin must be one line")
	}
	return note.Sign(&note.Note{Text: Checkpoint{Origin: origin, Size: n, Root: root}.Text()}, s)
}

// Open checks a signed checkpoint against the verifier keys and returns
// its body.
func Open(msg []byte, vkeys ...string) (Checkpoint, error) {
	if len(vkeys) == 0 {
		return Checkpoint{}, errors.New("proof: no verifier key given: pass the key printed by agentbox audit keygen (--verify-key)")
	}
	var vs []note.Verifier
	for _, k := range vkeys {
		v, err := note.NewVerifier(strings.TrimSpace(k))
		if err != nil {
			return Checkpoint{}, fmt.Errorf("proof: verifier key: %w", err)
		}
		vs = append(vs, v)
	}
	n, err := note.Open(msg, note.VerifierList(vs...))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("proof: checkpoint signature: %w", err)
	}
	return ParseCheckpoint(n.Text)
}

// IsNote reports whether b looks like a signed note (not the JSON
// checkpoint of audit.Checkpoint).
func IsNote(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] != '{' && bytes.Contains(b, []byte("\n\n\u2014 "))
}

// KeyGen makes an Ed25519 key pair named name: the signer key (keep it
// secret) and the verifier key (publish it).
func KeyGen(name string) (skey, vkey string, err error) {
	return note.GenerateKey(rand.Reader, name)
}

// ReadKey returns a key given as the file holding it, or inline.
func ReadKey(s string) (string, error) {
	if fi, err := os.Stat(s); err == nil && fi.Mode().IsRegular() {
		b, err := os.ReadFile(s)
		if err != nil {
			return "", fmt.Errorf("proof: key: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if strings.Count(s, "+") < 2 {
		return "", fmt.Errorf("proof: key %q is neither a file nor a key (make one with: agentbox audit keygen NAME)", s)
	}
	return strings.TrimSpace(s), nil
}

// ValidSigner reports why skey is not a usable signer key, or nil.
func ValidSigner(skey string) error {
	if _, err := note.NewSigner(strings.TrimSpace(skey)); err != nil {
		return fmt.Errorf("proof: signing key: %w (make one with: agentbox audit keygen NAME)", err)
	}
	return nil
}
