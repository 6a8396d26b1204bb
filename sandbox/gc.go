package sandbox

import (
	"os"
	"strconv"
)

// Removed is one sandbox gc removed, and why (its owner is proven dead,
// or it is older than the age bound although its owner could not be
// proven dead).
type Removed struct {
	ID     string
	Reason string
}

// GCOptions say whose orphans gc removes and how it reports its steps.
type GCOptions struct {
	// AllOwners removes the orphans of every user (root's `agentbox gc
	// --all-owners`); otherwise only those whose owner ran as the
	// invoking user (LabelOwnerUID), and the others are counted.
	AllOwners bool
	// Progress, when set, is told each step gc is about to wait on.
	Progress func(step string)
}

// Covers says whether gc with these options may remove an orphan with
// these owner labels: every one with AllOwners, else those of the
// invoking user. An orphan whose labels name no uid (made by an older
// agentbox) is nobody's: only AllOwners removes it.
func (o GCOptions) Covers(labels map[string]string) bool {
	return o.AllOwners || labels[LabelOwnerUID] == strconv.Itoa(os.Getuid())
}

// Step tells Progress that gc is about to wait on step.
func (o GCOptions) Step(step string) {
	if o.Progress != nil {
		o.Progress(step)
	}
}

// GCResult is what gc did: what it removed, and how many orphans (whose
// owner is proven gone) it left because another user owns them.
type GCResult struct {
	Removed []Removed
	Others  int
}
