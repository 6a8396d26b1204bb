package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/agentbox/agentbox/sandbox"
)

// Protocol identifies the messages both sides speak: a digest of every
// field (JSON name and type) of Request and Response and the types inside
// them. Each side computes it from the code it was built from, and the
// executor returns its own in the hello answer. Where the executor is not
// this very binary (Kubernetes: it is in the image), a different one means
// the image must be rebuilt.
var Protocol = fingerprint(reflect.TypeFor[Request](), reflect.TypeFor[Response]())

func fingerprint(types ...reflect.Type) string {
	var b strings.Builder
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			b.WriteString(t.Kind().String() + " ")
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			b.WriteString(t.Kind().String() + ";")
			return
		}
		b.WriteString(t.Name() + "{")
		if !seen[t] {
			seen[t] = true
			for f := range t.Fields() {
				b.WriteString(f.Tag.Get("json") + ":")
				walk(f.Type)
			}
		}
		b.WriteString("}")
	}
	for _, t := range types {
		walk(t)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:6])
}

// ProtocolError: the executor speaks another protocol (it was built from
// other code). It matches sandbox.ErrExecutor.
type ProtocolError struct {
	Executor string // its protocol ("" = older than this check)
	Version  string // its agentbox version
}

func (e *ProtocolError) Error() string {
	return fmt.Sprintf("the executor speaks protocol %q (agentbox %s), this agentbox speaks %q", e.Executor, e.Version, Protocol)
}

// Is makes a ProtocolError match sandbox.ErrExecutor.
func (e *ProtocolError) Is(target error) bool { return target == sandbox.ErrExecutor }

// IsProtocolError reports whether err is, or wraps, a ProtocolError.
func IsProtocolError(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}
