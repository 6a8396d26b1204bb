// Package sizes parses byte sizes written by people ("16KiB", "512MB",
// "1g") with github.com/docker/go-units: the one size parser.
package sizes

import (
	"fmt"
	"strings"

	"github.com/docker/go-units"
)

// Parse reads a byte size: a whole number of bytes, or a number with a
// unit. Binary units (KiB, MiB, GiB, TiB) and docker's bare k, m, g, t are
// powers of 1024; kB, MB, GB, TB are powers of 1000.
func Parse(s string) (int64, error) {
	s = strings.TrimSpace(s)
	unit := strings.ToLower(strings.TrimLeft(s, "0123456789. "))
	bad := fmt.Errorf("%q is not a size; write bytes or a number with a unit, like 16KiB, 512MB or 1GiB", s)
	if strings.TrimLeft(unit, "abcdefghijklmnopqrstuvwxyz") != "" {
		return 0, bad
	}
	var n int64
	var err error
	switch unit {
	case "kb", "mb", "gb", "tb", "pb":
		n, err = units.FromHumanSize(s)
	default:
		n, err = units.RAMInBytes(s)
	}
	if err != nil || n < 0 {
		return 0, bad
	}
	return n, nil
}
