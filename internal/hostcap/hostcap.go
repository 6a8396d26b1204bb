// Package hostcap bounds how many sandboxes run at once on this host,
// across every agentbox process and user: a sandbox holds one of N slot
// files under a shared runtime directory, locked with flock(2), so a slot
// is free again the moment its holder exits, however it exits. Waiting
// holders are served round-robin between owners (batches): an owner
// queues with one ticket at a time and goes to the back of the queue after
// every slot it takes, so one big batch cannot starve another.
package hostcap

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// HostFile is the operator's host-wide setting: a line
// "max_sandboxes: N". A user's AGENTBOX_MAX_SANDBOXES may only lower it.
const HostFile = "/etc/agentbox/host.conf"

// EnvMax is the environment variable that sets (or lowers) the cap.
const EnvMax = "AGENTBOX_MAX_SANDBOXES"

// Limit is the host-wide cap: the lower of HostFile's max_sandboxes and
// $AGENTBOX_MAX_SANDBOXES, else the number of CPUs. Where it came from is
// said in the second result.
func Limit(getenv func(string) string, hostFile string) (int, string, error) {
	n, from := runtime.NumCPU(), "the number of CPUs"
	if v, ok, err := readHostFile(hostFile); err != nil {
		return 0, "", err
	} else if ok {
		n, from = v, hostFile
	}
	if s := getenv(EnvMax); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return 0, "", fmt.Errorf("%s=%q: want a whole number of sandboxes, at least 1", EnvMax, s)
		}
		if from != hostFile || v < n {
			n, from = v, EnvMax
		}
	}
	return n, from, nil
}

func readHostFile(path string) (int, bool, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) || path == "" {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "max_sandboxes" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return 0, false, fmt.Errorf("%s:%d: max_sandboxes %q: want a whole number, at least 1", path, line, strings.TrimSpace(v))
		}
		return n, true, nil
	}
	return 0, false, sc.Err()
}

// EnvDir names another slot directory (tests; hosts that keep /run
// elsewhere). Only processes that share it share the cap.
const EnvDir = "AGENTBOX_RUNTIME_DIR"

// Dir is the shared runtime directory of the slots: $AGENTBOX_RUNTIME_DIR
// when set, else /run/agentbox (made
// world-writable and sticky by root so that every user shares it), else
// $XDG_RUNTIME_DIR/agentbox (this user's processes only), else
// $TMPDIR/agentbox-<uid>.
func Dir(getenv func(string) string) (string, error) {
	const shared = "/run/agentbox"
	if d := getenv(EnvDir); d != "" {
		if !filepath.IsAbs(d) {
			return "", fmt.Errorf("%s=%q is not an absolute path", EnvDir, d)
		}
		return d, os.MkdirAll(d, 0o700)
	}
	if os.Geteuid() == 0 {
		if err := os.MkdirAll(shared, 0o755); err == nil {
			_ = os.Chmod(shared, 0o777|os.ModeSticky)
			return shared, nil
		}
	} else if fi, err := os.Stat(shared); err == nil && fi.IsDir() && fi.Mode().Perm()&0o002 != 0 {
		return shared, nil
	}
	if x := getenv("XDG_RUNTIME_DIR"); x != "" && filepath.IsAbs(x) {
		d := filepath.Join(x, "agentbox")
		return d, os.MkdirAll(d, 0o700)
	}
	d := filepath.Join(os.TempDir(), "agentbox-"+strconv.Itoa(os.Geteuid()))
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", fmt.Errorf("making the sandbox slot directory %s: %w", d, err)
	}
	return d, nil
}

// Sandboxes says n sandboxes in words ("1 sandbox", "2 sandboxes"), as
// the waiting notices say the cap.
func Sandboxes(n int) string {
	if n == 1 {
		return "1 sandbox"
	}
	return strconv.Itoa(n) + " sandboxes"
}
