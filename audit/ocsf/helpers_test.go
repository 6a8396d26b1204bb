package ocsf_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func itoa(n int) string { return strconv.Itoa(n) }
