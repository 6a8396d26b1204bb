package workspace

import (
	"bufio"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// unmountBelow detaches every mount below dir (a disk image left mounted
// by a killed agentbox), deepest first, so that removing dir removes only
// its own files. Only root can; for others it does nothing.
func unmountBelow(dir string) {
	if os.Geteuid() != 0 {
		return
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	mounts, err := MountsUnder(abs)
	if err != nil {
		return
	}
	var below []string
	for _, mp := range mounts {
		if mp != abs {
			below = append(below, mp)
		}
	}
	sort.Slice(below, func(i, j int) bool { return len(below[i]) > len(below[j]) })
	for _, mp := range below {
		_ = unix.Unmount(mp, unix.MNT_DETACH)
	}
}

// MountsUnder lists the mount points at or below the absolute path dir
// in this process's mount namespace.
func MountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		if mp := unescapeMount(fields[4]); Inside(mp, dir) {
			out = append(out, mp)
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
