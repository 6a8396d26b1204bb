package docker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Container labels.
const (
	LabelSession = "agentbox.session"
	LabelOwner   = "agentbox.owner" // "<pid>:<start time in clock ticks>"
	LabelHost    = "agentbox.host"  // hostname of the owning process
)

// processStart returns the start time of pid (field 22 of /proc/PID/stat),
// which together with the pid identifies a process even after pid reuse.
func processStart(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(s[i+1:])
	// After ")": state is field 3, starttime is field 22.
	if len(f) < 20 {
		return "", false
	}
	return f[19], true
}

// OwnerLabel identifies the current process.
func OwnerLabel() string {
	st, _ := processStart(os.Getpid())
	return fmt.Sprintf("%d:%s", os.Getpid(), st)
}

// ownerAlive reports whether the process named by an owner label still
// runs on this host.
func ownerAlive(label string) bool {
	pidStr, start, ok := strings.Cut(label, ":")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return false
	}
	cur, ok := processStart(pid)
	return ok && cur == start
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
