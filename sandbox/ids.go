package sandbox

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns a new random session id (32 hex digits).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ValidID reports whether s can be a session id: 12 to 64 lowercase hex
// digits.
func ValidID(s string) bool {
	if len(s) < 12 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
