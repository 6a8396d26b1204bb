package workspacetest

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/workspace"
	"golang.org/x/sys/unix"
)

// View is the sandbox's view of a workspace plan: the directory itself,
// or, for an overlay, a kernel overlay of its layers mounted as the
// engine mounts it (needs root; the test is skipped without it). The
// returned function unmounts it (the sandbox is gone); it is also
// unmounted at the end of the test.
func View(t *testing.T, p workspace.Plan) (string, func()) {
	t.Helper()
	if p.Overlay == nil {
		return p.Dir, func() {}
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay needs root")
	}
	lower := p.Overlay.Lower
	if lower == "" {
		lower = p.Dir
	}
	merged := filepath.Join(t.TempDir(), "merged")
	if err := os.Mkdir(merged, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := "lowerdir=" + lower + ",upperdir=" + p.Overlay.Upper + ",workdir=" + p.Overlay.Work + ",userxattr,redirect_dir=nofollow,metacopy=off,index=off"
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		t.Skipf("no kernel overlay here: %v", err)
	}
	mounted := true
	unmount := func() {
		if !mounted {
			return
		}
		mounted = false
		if err := unix.Unmount(merged, unix.MNT_DETACH); err != nil {
			t.Errorf("unmounting %s: %v", merged, err)
		}
	}
	t.Cleanup(unmount)
	return merged, unmount
}

// MountsUnder lists the mount points at or below dir (this process's
// mount namespace).
func MountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Skipf("no mount table here: %v", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			n := 0
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				n = n*8 + int(c-'0')
			}
			if ok {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
