package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Redacted replaces every redacted value.
const Redacted = "[REDACTED]"

// MinSecretLen is the shortest literal secret Options.Secrets honours;
// shorter values would redact ordinary words.
const MinSecretLen = 4

// DefaultPreviewBytes is Options.PreviewBytes when it is zero.
const DefaultPreviewBytes = 4096

// Bounds besides PreviewBytes.
const (
	maxFiles     = 1000     // FileChange entries kept in one session_end
	maxArgsBytes = 64 << 10 // encoded args beyond this are replaced by a summary
	maxLineBytes = 16 << 20 // lines longer than this are malformed for readers
	maxDepth     = 64       // nesting of args values kept
	maxPlanSteps = 32       // plan steps kept in one record
)

// Redactor returns the function the writer applies to every string before it
// is hashed and written: each literal secret of opts.Secrets (those of at
// least MinSecretLen bytes), also in its hex and base64 forms, then each
// match of opts.Redact, then every built-in secret format (detectors) is
// replaced by "[REDACTED]". The CLI and the agent use it for terminal output
// too.
func Redactor(opts Options) func(string) string {
	var secrets []string
	for _, s := range opts.Secrets {
		if len(s) >= MinSecretLen {
			secrets = append(secrets, s)
			secrets = append(secrets, encodedForms(s)...)
		}
	}
	// Longest first, so a secret containing another one is replaced whole.
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	var rep *strings.Replacer
	if len(secrets) > 0 {
		pairs := make([]string, 0, 2*len(secrets))
		for _, s := range secrets {
			pairs = append(pairs, s, Redacted)
		}
		rep = strings.NewReplacer(pairs...)
	}
	var res []prefiltered
	for _, re := range opts.Redact {
		if re != nil {
			res = append(res, newPrefiltered(re))
		}
	}
	return func(s string) string {
		if s == "" {
			return s
		}
		if rep != nil {
			s = rep.Replace(s)
		}
		if len(res) > 0 {
			lower, safe := strings.ToLower(s), foldSafe(s)
			for _, p := range res {
				if !p.skip(lower, safe) {
					s = p.re.ReplaceAllLiteralString(s, Redacted)
					lower = strings.ToLower(s)
				}
			}
		}
		return applyDetectors(s)
	}
}

// sanitizer redacts and bounds the fields of a record.
type sanitizer struct {
	redact  func(string) string
	preview int
}

func newSanitizer(opts Options) sanitizer {
	p := opts.PreviewBytes
	if p <= 0 {
		p = DefaultPreviewBytes
	}
	return sanitizer{redact: Redactor(opts), preview: p}
}

// text redacts s and truncates it to the preview size with a marker.
func (z sanitizer) text(s string) string {
	return truncate(z.redact(s), z.preview)
}

// record returns a copy of r with every string redacted and bounded. r itself
// (its Args and Files included) is not modified.
func (z sanitizer) record(r *Record) (Record, error) {
	c := *r
	for _, p := range []*string{
		&c.Session, &c.Event, &c.Task, &c.PolicyPath, &c.PolicySHA256, &c.Image,
		&c.ImageID, &c.ContainerID, &c.Workspace, &c.WorkspaceMode, &c.Model,
		&c.Version, &c.User, &c.Host, &c.CallID, &c.Tool, &c.Phase, &c.Decision,
		&c.Rule, &c.DecidedBy, &c.Reason, &c.OutputSHA256, &c.OutputPreview,
		&c.FinishReason, &c.Status, &c.Answer, &c.Error, &c.Approver, &c.Scope,
		&c.TaskID, &c.Batch, &c.Text, &c.Prompt, &c.NetHost, &c.NetAddr,
		&c.NetMethod, &c.NetPath, &c.RuleText, &c.Secret, &c.BodySHA256,
	} {
		*p = z.text(*p)
	}
	z.execInfo(&c)
	if len(r.Args) > 0 {
		args, err := z.args(r.Args)
		if err != nil {
			return c, err
		}
		c.Args = args
	}
	if len(r.Plan) > 0 {
		c.Plan = make([]string, 0, min(len(r.Plan), maxPlanSteps))
		for _, p := range r.Plan[:min(len(r.Plan), maxPlanSteps)] {
			c.Plan = append(c.Plan, z.text(p))
		}
	}
	if len(r.Files) > 0 {
		n := min(len(r.Files), maxFiles)
		c.Files = make([]FileChange, 0, n+2)
		file := func(f FileChange) FileChange {
			return FileChange{Path: z.text(f.Path), SHA256: z.text(f.SHA256), SHA256Before: z.text(f.SHA256Before), Bytes: f.Bytes, Change: z.text(f.Change)}
		}
		for _, f := range r.Files[:n] {
			c.Files = append(c.Files, file(f))
		}
		// Past the bound: a marker counting the files, and the list's
		// incomplete marker kept.
		if extra := CountFiles(r.Files[n:]); extra > 0 {
			c.Files = append(c.Files, omittedEntry(extra))
		}
		for _, f := range r.Files[n:] {
			if f.Change == ChangeIncomplete {
				c.Files = append(c.Files, file(f))
			}
		}
	}
	return c, nil
}

// args normalises the arguments through JSON (so any Go value the caller
// passed becomes maps, slices, strings, json.Number, bools and nils), then
// redacts every key and string and bounds each string. If the result is
// still too large it is replaced by a one-key summary.
func (z sanitizer) args(in map[string]any) (map[string]any, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("audit: encode tool arguments: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("audit: normalise tool arguments: %w", err)
	}
	out, _ := z.value(v, 0).(map[string]any)
	enc, err := marshalValue(out)
	if err != nil {
		return nil, fmt.Errorf("audit: encode tool arguments: %w", err)
	}
	if len(enc) > maxArgsBytes {
		return map[string]any{"_summary": summarize(string(enc), z.preview)}, nil
	}
	return out, nil
}

func (z sanitizer) value(v any, depth int) any {
	switch t := v.(type) {
	case string:
		s := z.redact(t)
		if len(s) > z.preview {
			return summarize(s, z.preview)
		}
		return s
	case map[string]any:
		if depth >= maxDepth {
			return "…[nested too deep]"
		}
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[z.text(k)] = z.value(e, depth+1)
		}
		return m
	case []any:
		if depth >= maxDepth {
			return "…[nested too deep]"
		}
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = z.value(e, depth+1)
		}
		return l
	default: // json.Number, bool, nil
		return v
	}
}

// truncate cuts s to at most n bytes (on a rune boundary) and appends
// "…[truncated K bytes]" where K is the number of bytes removed.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := runeCut(s, n)
	return s[:cut] + fmt.Sprintf("…[truncated %d bytes]", len(s)-cut)
}

// summarize keeps the first n bytes of s and appends its size and sha256.
func summarize(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return s[:runeCut(s, n)] + fmt.Sprintf(" …[%d bytes, sha256 %s]", len(s), hex.EncodeToString(sum[:]))
}

// runeCut returns the largest index <= n that does not split a UTF-8
// sequence of s.
func runeCut(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := n; i > 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			return i
		}
	}
	return n
}
