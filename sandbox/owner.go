package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Owner identity of a sandbox, shared by every backend: the labels (Docker)
// or annotations (Kubernetes) that let `agentbox gc` prove the process that
// started a sandbox gone, beyond pid reuse, PID namespaces and reboots.
// LabelOwner keeps the "<pid>:<start time in clock ticks>" form older
// agentbox binaries parse (they would take any other form for a dead owner
// and remove the sandbox).
const (
	LabelSession   = "agentbox.session"
	LabelOwner     = "agentbox.owner"       // "<pid>:<start time in clock ticks>"
	LabelOwnerNS   = "agentbox.owner.pidns" // inode of the owner's PID namespace
	LabelOwnerBoot = "agentbox.owner.boot"  // /proc/sys/kernel/random/boot_id of the owner's kernel
	LabelOwnerUID  = "agentbox.owner.uid"   // the uid the owner ran as: whose gc removes it (GCOptions.Covers)
	LabelHost      = "agentbox.host"        // hostname of the owning process
	LabelTimeout   = "agentbox.timeout"     // the session timeout in seconds (0 = not said)
)

// GCAgeBound is how long past its session timeout a sandbox whose owner
// cannot be proven dead (another PID namespace, an older label) is kept.
const GCAgeBound = 24 * time.Hour

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

// pidNamespace is the inode of this process's PID namespace ("" unknown).
func pidNamespace() string {
	l, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	// "pid:[4026531836]"
	l = strings.TrimPrefix(l, "pid:[")
	return strings.TrimSuffix(l, "]")
}

var bootOnce = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
})

// OwnerLabel identifies the current process by pid and start time.
func OwnerLabel() string {
	st, _ := processStart(os.Getpid())
	return fmt.Sprintf("%d:%s", os.Getpid(), st)
}

// OwnerLabels are the labels identifying the current process (pid and
// start time, PID namespace, boot) and the user it runs as.
func OwnerLabels() map[string]string {
	return map[string]string{LabelOwner: OwnerLabel(), LabelOwnerNS: pidNamespace(), LabelOwnerBoot: bootOnce(),
		LabelOwnerUID: strconv.Itoa(os.Getuid())}
}

// Hostname is this machine's name for LabelHost ("" unknown).
func Hostname() string {
	h, _ := os.Hostname()
	return h
}

// OwnerState is what gc can prove about the owner of a sandbox.
type OwnerState int

// Owner states.
const (
	OwnerUnknown   OwnerState = iota // cannot be proven either way from here
	OwnerAlive                       // the very process runs
	OwnerDead                        // same kernel and PID namespace, the process is gone
	OwnerOtherBoot                   // it ran under another boot (or machine)
)

// JudgeOwner decides a sandbox's owner labels from where this process runs.
func JudgeOwner(labels map[string]string) OwnerState {
	ns, boot := labels[LabelOwnerNS], labels[LabelOwnerBoot]
	pidStr, start, ok := strings.Cut(labels[LabelOwner], ":")
	if !ok || ns == "" || boot == "" {
		return OwnerUnknown // an older sandbox, or labels that say too little
	}
	if me := bootOnce(); me == "" {
		return OwnerUnknown
	} else if boot != me {
		return OwnerOtherBoot
	}
	if me := pidNamespace(); me == "" || ns != me {
		return OwnerUnknown // another PID namespace: its pids mean nothing here
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return OwnerUnknown
	}
	if cur, ok := processStart(pid); ok && cur == start {
		return OwnerAlive
	}
	return OwnerDead
}

// GCReason says why a sandbox with these owner labels may be removed, or
// "" when it must be left alone: its owner is proven dead; or it ran under
// another boot and no longer runs (stopped); or its owner cannot be proven
// dead but it was created (zero: unknown) GCAgeBound past its session
// timeout before now.
func GCReason(labels map[string]string, stopped bool, created, now time.Time) string {
	switch JudgeOwner(labels) {
	case OwnerDead:
		return "its owner process is gone"
	case OwnerOtherBoot:
		if stopped {
			return "its owner ran under another boot and it no longer runs"
		}
	case OwnerAlive:
		return ""
	}
	timeout, _ := strconv.ParseInt(labels[LabelTimeout], 10, 64)
	bound := time.Duration(timeout)*time.Second + GCAgeBound
	if age := now.Sub(created); !created.IsZero() && created.Unix() > 0 && age > bound {
		return fmt.Sprintf("its owner cannot be proven dead from here, but it is %s old (past its session timeout + %s)", age.Round(time.Minute), GCAgeBound)
	}
	return ""
}
