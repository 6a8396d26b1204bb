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
	// Scope is how far the answer reaches: audit.ScopeOnce (also when
	// empty), ScopeSession or ScopeWorkspace.
	Scope string
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
	scope := audit.ScopeOnce
	if by == audit.DecidedByFlag {
		scope = audit.ScopeSession // the flag answers every ask of the session
	}
	return Approval{Allow: false, DecidedBy: by, Approver: "deny-all", Note: note, Scope: scope}, nil
}

// Approve allows.
func (AllowAll) Approve(context.Context, ApprovalRequest) (Approval, error) {
	return Approval{Allow: true, DecidedBy: audit.DecidedByFlag, Approver: "allow-all", Scope: audit.ScopeSession}, nil
}

// Prompt asks on a terminal. One key answers: y (yes, once), n (no,
// once), r (no, and tell the model why: the reason typed goes to the
// model), s (yes for this session), d (deny for this session: later asks
// the same rule covers are denied without asking), a (always: with Store,
// the shown command prefixes are saved for the workspace). The prompt
// shows the rule s, d and a keep (answerRule) and where a saves it before
// the user picks. End of input denies. A Prompt belongs to one session; it
// is not safe for concurrent use.
type Prompt struct {
	// Store, when set, is the workspace's saved answers: calls they cover
	// are allowed without asking (after this session's denials), and "a"
	// saves to it.
	Store ApprovalStore
	// SingleKey, when set, switches the terminal to reading single keys
	// (no Enter) and returns the function that switches it back; the CLI
	// sets it on a terminal.
	SingleKey func() (restore func())

	in      *bufio.Reader
	out     io.Writer
	session sessionAnswers
	lines   chan lineRead // fed by one reader goroutine, started on first use
	buf     []byte        // bytes read but not yet used
}

type lineRead struct {
	line string
	err  error
}

// NewPrompt returns a Prompt reading answers from in and writing questions
// to out.
func NewPrompt(in io.Reader, out io.Writer) *Prompt {
	return &Prompt{in: bufio.NewReader(in), out: out}
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
	if ap, ok := p.session.answer(req); ok {
		return ap, nil
	}
	if ap, ok := savedAnswer(p.Store, req); ok {
		return ap, nil
	}
	rule := ruleFor(req)
	canSave := p.Store != nil && len(rule.prefixes) > 0
	text := p.question(req, rule, canSave)
	keys := "y/n/r/d"
	question := "Allow? [y]es once / [n]o / [r] no, and tell the model why"
	if rule.broad() {
		keys = "y/n/r/s/d"
		question += " / [s] yes for this session"
	}
	if canSave {
		keys = "y/n/r/s/a/d"
		question += " / [a]lways in this workspace"
	}
	question += " / [d]eny for this session: "
	shown = text + question
	if _, err := io.WriteString(p.out, text); err != nil {
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
		user := Approval{DecidedBy: audit.DecidedByUser, Approver: "interactive", Scope: audit.ScopeOnce}
		switch ans := strings.ToLower(strings.TrimSpace(line)); {
		case ans == "y" || ans == "yes":
			user.Allow = true
			return user, nil
		case (ans == "s" || ans == "session") && rule.broad():
			p.session.allow(rule)
			user.Allow, user.Scope, user.Note = true, audit.ScopeSession, "yes for this session: "+rule.String()
			return user, nil
		case (ans == "a" || ans == "always") && canSave:
			p.session.allow(rule)
			user.Allow, user.Scope, user.Note = true, audit.ScopeWorkspace, "always in this workspace: "+rule.String()+", saved in "+p.Store.Where()
			if serr := p.Store.Add(rule.prefixes); serr != nil {
				fmt.Fprintf(p.out, "agentbox: could not save the answer for later sessions (allowed for this session only): %v\n", serr)
				user.Scope, user.Note = audit.ScopeSession, "yes for this session (saving failed): "+rule.String()
			}
			return user, nil
		case ans == "d" || ans == "deny":
			p.session.deny(rule)
			user.Scope = audit.ScopeSession
			user.Note = "the user denied this for the rest of the session (" + rule.String() + "); do not ask again, do it another way or stop"
			return user, nil
		case ans == "n" || ans == "no":
			user.Note = "the user declined"
			return user, nil
		case ans == "r":
			fmt.Fprint(p.out, "Why not? (sent to the model): ")
			why, rerr := p.readLine(ctx)
			if ctx.Err() != nil {
				return Approval{}, context.Cause(ctx)
			}
			user.Note = "the user declined"
			if w := strings.TrimSpace(why); w != "" {
				user.Note += " and says: " + w
			}
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				return Approval{}, fmt.Errorf("reading the approval answer: %w", rerr)
			}
			return user, nil
		}
		if err != nil {
			fmt.Fprintln(p.out)
			if errors.Is(err, io.EOF) {
				user.Note = "the user gave no answer (end of input)"
				return user, nil
			}
			return Approval{}, fmt.Errorf("reading the approval answer: %w", err)
		}
		fmt.Fprintf(p.out, "please answer %s\n", keys)
	}
	return Approval{Allow: false, DecidedBy: audit.DecidedByUser, Approver: "interactive", Scope: audit.ScopeOnce, Note: "no valid answer"}, nil
}

// question is the text before the answer line, three lines (the command
// may hold more of its own): the call; the rule and why it asks (the
// asking parts when they are not the whole command); what [s]/[d] keep
// for the session and where [a] saves, before the user picks.
func (p *Prompt) question(req ApprovalRequest, rule answerRule, canSave bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nagentbox: the policy asks before this %s call: %s\n", req.Tool, policy.Visible(req.Subject))
	b.WriteString("  rule: " + firstNonEmpty(req.Decision.Rule, "policy"))
	if req.Decision.Pattern != "" {
		fmt.Fprintf(&b, " %q", req.Decision.Pattern)
	}
	if why := askWhy(req); why != "" {
		b.WriteString(" — " + policy.Visible(why))
	}
	if parts := askParts(req.Decision); len(parts) > 1 || (len(parts) == 1 && strings.Join(parts[0].Argv, " ") != req.Subject) {
		asks := make([]string, len(parts))
		for i, part := range parts {
			asks[i] = strings.Join(part.Argv, " ") + " (" + part.Rule + ")"
		}
		b.WriteString("; asks: " + policy.Visible(strings.Join(asks, ", ")))
	}
	b.WriteByte('\n')
	if rule.broad() {
		fmt.Fprintf(&b, "  [s]/[d] this session: %s (until it ends)", rule)
	} else {
		fmt.Fprintf(&b, "  [d] this session: %s (until it ends)", rule)
	}
	if canSave {
		fmt.Fprintf(&b, " · [a] saves: %s in %s", rule, policy.Visible(p.Store.Where()))
	}
	b.WriteByte('\n')
	return b.String()
}

// askWhy is why the policy asks, in a few words: the rule's own why, else
// the decision's reason without what the prompt shows already (the
// command, and "matched RULE" when the rule is named).
func askWhy(req ApprovalRequest) string {
	if req.Decision.Why != "" {
		return req.Decision.Why
	}
	why := strings.TrimPrefix(req.Decision.Reason, req.Subject+": ")
	for _, part := range askParts(req.Decision) {
		why = strings.TrimPrefix(why, strings.Join(part.Argv, " ")+": ")
	}
	if strings.HasPrefix(why, "matched "+req.Decision.Rule) {
		return ""
	}
	return why
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
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
