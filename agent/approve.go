package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox/agentbox/audit"
	"github.com/agentbox/agentbox/policy"
)

// ApprovalRequest is a call the policy says to ask about.
type ApprovalRequest struct {
	CallID   string
	Tool     string
	Subject  string // the command, or the path
	Decision policy.Decision
}

// Approval is the answer. DecidedBy is one of audit.DecidedByUser,
// audit.DecidedByFlag, audit.DecidedBySessionRule or audit.DecidedByPolicy
// (nobody could be asked).
type Approval struct {
	Allow     bool
	DecidedBy string
	Approver  string // which approver answered, for the audit log
	Note      string // shown to the model when denied
	Prompt    string // the question as shown to the user, for the audit log
}

// Approver answers the calls the policy says to ask about.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (Approval, error)
}

// DenyAll denies every request: the approver when there is no terminal to
// ask. DecidedBy defaults to "policy" (nobody was asked); the CLI sets
// "flag" for --approve deny.
type DenyAll struct{ DecidedBy string }

// AllowAll allows every request (--approve allow); decided_by "flag".
type AllowAll struct{}

var (
	_ Approver = DenyAll{}
	_ Approver = AllowAll{}
	_ Approver = (*Prompt)(nil)
)

// Approve denies.
func (d DenyAll) Approve(context.Context, ApprovalRequest) (Approval, error) {
	by := d.DecidedBy
	if by == "" {
		by = audit.DecidedByNoTerminal
	}
	note := "the policy requires approval and no one could be asked (no terminal)"
	if by == audit.DecidedByFlag {
		note = "the policy requires approval and the user denies all such requests (--approve deny)"
	}
	return Approval{Allow: false, DecidedBy: by, Approver: "deny-all", Note: note}, nil
}

// Approve allows.
func (AllowAll) Approve(context.Context, ApprovalRequest) (Approval, error) {
	return Approval{Allow: true, DecidedBy: audit.DecidedByFlag, Approver: "allow-all"}, nil
}

// Prompt asks on a terminal: y (yes), n (no), r (no, and tell the model
// why: the reason typed goes to the model), a (always: allow every later
// call this rule asks about, for this session, and with Store, the shown
// command prefixes for this workspace from now on). End of input denies.
// A Prompt belongs to one session; it is not safe for concurrent use.
type Prompt struct {
	// Store, when set, keeps "always" answers for the workspace and makes
	// "always" available for commands no rule matched (as their exact
	// command prefix).
	Store ApprovalStore
	// SingleKey, when set, switches the terminal to reading single keys
	// (no Enter) and returns the function that switches it back; the CLI
	// sets it on a terminal.
	SingleKey func() (restore func())

	in     *bufio.Reader
	out    io.Writer
	always map[string]bool
	lines  chan lineRead // fed by one reader goroutine, started on first use
	buf    []byte        // bytes read but not yet used
	// prefixes answered "always" in this session
	prefixes []string
}

type lineRead struct {
	line string
	err  error
}

// NewPrompt returns a Prompt reading answers from in and writing questions
// to out.
func NewPrompt(in io.Reader, out io.Writer) *Prompt {
	return &Prompt{in: bufio.NewReader(in), out: out, always: map[string]bool{}}
}

// readLine waits for the next answer line or for ctx to end, so that
// Ctrl-C at the prompt stops the run at once. The reader goroutine blocks
// on the input, which cannot be interrupted portably; it ends at end of
// input, and for a terminal with the process, which exits right after an
// interrupt.
func (p *Prompt) readLine(ctx context.Context) (string, error) {
	p.start()
	for {
		if i := strings.IndexByte(string(p.buf), '\n'); i >= 0 {
			line := string(p.buf[:i+1])
			p.buf = p.buf[i+1:]
			return line, nil
		}
		if err := p.more(ctx); err != nil {
			line := string(p.buf)
			p.buf = nil
			return line, err
		}
	}
}

// start starts the reader goroutine on first use.
func (p *Prompt) start() {
	if p.lines == nil {
		p.lines = make(chan lineRead)
		go func() {
			chunk := make([]byte, 256)
			for {
				n, err := p.in.Read(chunk)
				p.lines <- lineRead{string(chunk[:n]), err}
				if err != nil {
					close(p.lines)
					return
				}
			}
		}()
	}
}

// more waits for more input (or ctx).
func (p *Prompt) more(ctx context.Context) error {
	select {
	case r, ok := <-p.lines:
		if !ok {
			return io.EOF
		}
		p.buf = append(p.buf, r.line...)
		return r.err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// readAnswer reads one answer: a single key with SingleKey (echoed),
// else a line.
func (p *Prompt) readAnswer(ctx context.Context) (string, error) {
	if p.SingleKey == nil {
		return p.readLine(ctx)
	}
	restore := p.SingleKey()
	defer restore()
	p.start()
	for {
		for len(p.buf) > 0 {
			k := p.buf[0]
			p.buf = p.buf[1:]
			if k == '\n' || k == '\r' || k == ' ' {
				continue
			}
			fmt.Fprintf(p.out, "%c\n", k)
			return string(k), nil
		}
		if err := p.more(ctx); err != nil && len(p.buf) == 0 {
			return "", err
		}
	}
}

// rememberable reports whether "always" may be offered for rule: only for
// a rule the policy names in a list, never for the catch-all defaults.
func rememberable(rule string) bool {
	return strings.Contains(rule, "[")
}

// Approve asks the user; it returns ctx's error when ctx ends first.
func (p *Prompt) Approve(ctx context.Context, req ApprovalRequest) (ap Approval, err error) {
	var shown string
	defer func() { ap.Prompt = shown }()
	rule := req.Decision.Rule
	// "always" covers a call only when every part that asks was allowed
	// for the session: one remembered rule must not carry other commands
	// of the same script with it.
	asking := askRules(req.Decision)
	parts := askParts(req.Decision)
	if p.allRemembered(asking, parts) {
		return Approval{Allow: true, DecidedBy: audit.DecidedBySessionRule, Approver: "interactive", Note: "always for " + strings.Join(asking, ", ")}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nagentbox: the policy asks before this %s call:\n", req.Tool)
	fmt.Fprintf(&b, "    %s\n", policy.Visible(req.Subject))
	if rule != "" {
		fmt.Fprintf(&b, "  rule:   %s", rule)
		if req.Decision.Pattern != "" {
			fmt.Fprintf(&b, " %q", req.Decision.Pattern)
		}
		b.WriteByte('\n')
	}
	if req.Decision.Why != "" {
		fmt.Fprintf(&b, "  why:    %s\n", policy.Visible(req.Decision.Why))
	}
	if req.Decision.Reason != "" {
		fmt.Fprintf(&b, "  reason: %s\n", policy.Visible(req.Decision.Reason))
	}
	for _, part := range parts {
		fmt.Fprintf(&b, "  asks:   %s  (%s)\n", policy.Visible(strings.Join(part.Argv, " ")), part.Rule)
	}
	// With a store, "always" remembers command prefixes for the workspace
	// (also for commands no rule matched); without, named rules for the
	// session.
	var prefixes []string
	if p.Store != nil && req.Tool == ToolExecuteBash && len(parts) > 0 {
		for _, part := range parts {
			prefixes = append(prefixes, rememberPrefix(part))
		}
	}
	canRemember := len(asking) > 0
	for _, r := range asking {
		canRemember = canRemember && rememberable(r)
	}
	canRemember = canRemember || len(prefixes) > 0
	keys := "y/n/r/a"
	question := "Allow? [y]es / [n]o / [r] no, and tell the model why"
	switch {
	case len(prefixes) > 0:
		question += fmt.Sprintf(" / [a]lways for %s in this workspace", policy.Visible(quoteAll(prefixes)))
	case canRemember:
		question += fmt.Sprintf(" / [a]lways for %s in this session", strings.Join(asking, ", "))
	default:
		keys = "y/n/r"
	}
	question += ": "
	shown = b.String() + question
	if _, err := io.WriteString(p.out, b.String()); err != nil {
		return Approval{}, fmt.Errorf("writing the approval prompt: %w", err)
	}
	for range 3 {
		if err := ctx.Err(); err != nil {
			return Approval{}, context.Cause(ctx)
		}
		fmt.Fprint(p.out, question)
		line, err := p.readAnswer(ctx)
		if ctx.Err() != nil {
			fmt.Fprintln(p.out)
			return Approval{}, context.Cause(ctx)
		}
		ans := strings.ToLower(strings.TrimSpace(line))
		switch {
		case ans == "y" || ans == "yes":
			return Approval{Allow: true, DecidedBy: audit.DecidedByUser, Approver: "interactive"}, nil
		case (ans == "a" || ans == "always") && canRemember:
			for _, r := range asking {
				p.always[r] = true
			}
			note := "always for " + strings.Join(asking, ", ")
			if len(prefixes) > 0 {
				p.prefixes = append(p.prefixes, prefixes...)
				note = "always in this workspace for " + quoteAll(prefixes)
				if serr := p.Store.Add(prefixes); serr != nil {
					fmt.Fprintf(p.out, "agentbox: could not save the answer for later sessions: %v\n", serr)
				}
			}
			return Approval{Allow: true, DecidedBy: audit.DecidedByUser, Approver: "interactive", Note: note}, nil
		case ans == "n" || ans == "no":
			return Approval{Allow: false, DecidedBy: audit.DecidedByUser, Approver: "interactive", Note: "the user declined"}, nil
		case ans == "r":
			fmt.Fprint(p.out, "Why not? (sent to the model): ")
			why, rerr := p.readLine(ctx)
			if ctx.Err() != nil {
				return Approval{}, context.Cause(ctx)
			}
			note := "the user declined"
			if w := strings.TrimSpace(why); w != "" {
				note += " and says: " + w
			}
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				return Approval{}, fmt.Errorf("reading the approval answer: %w", rerr)
			}
			return Approval{Allow: false, DecidedBy: audit.DecidedByUser, Approver: "interactive", Note: note}, nil
		}
		if err != nil {
			fmt.Fprintln(p.out)
			if errors.Is(err, io.EOF) {
				return Approval{Allow: false, DecidedBy: audit.DecidedByUser, Approver: "interactive", Note: "the user gave no answer (end of input)"}, nil
			}
			return Approval{}, fmt.Errorf("reading the approval answer: %w", err)
		}
		fmt.Fprintf(p.out, "please answer %s\n", keys)
	}
	return Approval{Allow: false, DecidedBy: audit.DecidedByUser, Approver: "interactive", Note: "no valid answer"}, nil
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "`" + s + "`"
	}
	return strings.Join(q, ", ")
}

// askRules lists the distinct rules of the parts that ask (for a file
// decision, its one rule).
func askRules(d policy.Decision) []string {
	var out []string
	seen := map[string]bool{}
	add := func(r string) {
		if r != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, part := range d.Parts {
		if part.Verdict == policy.Ask {
			add(part.Rule)
		}
	}
	if len(out) == 0 && d.Verdict == policy.Ask {
		add(d.Rule)
	}
	return out
}

// allRemembered reports whether "always" answers of this session cover
// every asking part: by its named rule, or by a remembered prefix.
func (p *Prompt) allRemembered(rules []string, parts []policy.Part) bool {
	if len(rules) == 0 {
		return false
	}
	if len(parts) == 0 {
		for _, r := range rules {
			if !p.always[r] || !rememberable(r) {
				return false
			}
		}
		return true
	}
	for _, part := range parts {
		if !(p.always[part.Rule] && rememberable(part.Rule)) && matchPrefix(part.Argv, p.prefixes) == "" {
			return false
		}
	}
	return true
}
