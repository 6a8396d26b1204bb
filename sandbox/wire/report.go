package wire

// Ask is the executor's question to the host while a traced program waits
// at its exec stop: run it or not. The host answers with OpAnswer carrying
// the same Seq; no answer within the call's timeout denies.
type Ask struct {
	Seq    uint64   `json:"seq"`
	Argv   []string `json:"argv"`
	PID    int      `json:"pid"`
	Rule   string   `json:"rule,omitempty"`
	Reason string   `json:"reason,omitempty"`
}

// Answer is the host's reply to an Ask.
type Answer struct {
	Seq   uint64 `json:"seq"`
	Allow bool   `json:"allow"`
}

// Program is one program that ran during a call and how often: Name is
// the name it ran under (argv[0] as executed, or the real executable when
// argv[0] named another program); Program what the image's manifest knows
// its content as (python3.11 for a copy run as ./lister; "" without a
// manifest); Toolchain the toolchain it ran as part of (go's compile,
// go test's test binary); Unknown when its file is not one of the image's
// executables.
type Program struct {
	Name      string `json:"name"`
	Program   string `json:"program,omitempty"`
	Toolchain string `json:"toolchain,omitempty"`
	Unknown   bool   `json:"unknown,omitempty"`
	Count     int    `json:"count"`
}

// ExecStop is one exec the executor stopped: the program never ran its first
// instruction. Verdict is "deny", or "ask" when an ask was refused.
type ExecStop struct {
	Argv    []string `json:"argv"`
	Exe     string   `json:"exe,omitempty"`
	PID     int      `json:"pid"`
	Verdict string   `json:"decision"`
	Rule    string   `json:"rule,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// Alarm is an effect the post-call check found and undid: a write-denied
// path that appeared or changed, a set-id bit, a device node.
type Alarm struct {
	Path   []byte `json:"path"`   // relative to /workspace; bytes: names need not be UTF-8
	What   string `json:"what"`   // "created", "changed", "removed", "setid", "device", "incomplete"
	Action string `json:"action"` // "removed", "restored", "cleared", "reported"
	Rule   string `json:"rule,omitempty"`
	// Argv and Parents (the parent chain, nearest first, each "argv0
	// (pid)") describe a program: "unexpected_exec", "unknown_binary".
	Argv    []string `json:"argv,omitempty"`
	Parents []string `json:"parents,omitempty"`
}
