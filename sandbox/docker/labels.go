package docker

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Container labels. The owner is identified beyond pid reuse, PID
// namespaces and reboots by three labels; agentbox.owner keeps the
// "<pid>:<start time in clock ticks>" form older agentbox binaries parse
// (they would take any other form for a dead owner and remove the sandbox).
const (
	LabelSession   = "agentbox.session"
	LabelOwner     = "agentbox.owner"       // "<pid>:<start time in clock ticks>"
	LabelOwnerNS   = "agentbox.owner.pidns" // inode of the owner's PID namespace
	LabelOwnerBoot = "agentbox.owner.boot"  // /proc/sys/kernel/random/boot_id of the owner's kernel
	LabelHost      = "agentbox.host"        // hostname of the owning process
	LabelTimeout   = "agentbox.timeout"     // the session timeout in seconds (0 = not said)
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
// start time, PID namespace, boot).
func OwnerLabels() map[string]string {
	return map[string]string{LabelOwner: OwnerLabel(), LabelOwnerNS: pidNamespace(), LabelOwnerBoot: bootOnce()}
}

// ownerState is what gc can prove about the owner of a sandbox.
type ownerState int

const (
	ownerUnknown   ownerState = iota // cannot be proven either way from here
	ownerAlive                       // the very process runs
	ownerDead                        // same kernel and PID namespace, the process is gone
	ownerOtherBoot                   // it ran under another boot (or machine)
)

// judgeOwner decides a sandbox's owner labels from where this process runs.
func judgeOwner(labels map[string]string) ownerState {
	ns, boot := labels[LabelOwnerNS], labels[LabelOwnerBoot]
	pidStr, start, ok := strings.Cut(labels[LabelOwner], ":")
	if !ok || ns == "" || boot == "" {
		return ownerUnknown // an older sandbox, or labels that say too little
	}
	if me := bootOnce(); me == "" {
		return ownerUnknown
	} else if boot != me {
		return ownerOtherBoot
	}
	if me := pidNamespace(); me == "" || ns != me {
		return ownerUnknown // another PID namespace: its pids mean nothing here
	}
	pid, err := strconv.Atoi(pidStr)
	if err != nil || pid <= 0 {
		return ownerUnknown
	}
	if cur, ok := processStart(pid); ok && cur == start {
		return ownerAlive
	}
	return ownerDead
}

func hostname() string {
	h, _ := os.Hostname()
	return h
}
