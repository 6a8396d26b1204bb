package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// LocalFile is the policy file used when no --policy is given and it
// exists in the current directory.
const LocalFile = "agentbox.yaml"

// Resolve loads the policy a command should use: the named file, else
// ./agentbox.yaml if present, else the built-in default.
func Resolve(path string) (*Policy, error) {
	if path != "" {
		return Load(path)
	}
	if fi, err := os.Stat(LocalFile); err == nil && fi.Mode().IsRegular() {
		return Load(LocalFile)
	}
	return Default(), nil
}

// Describe names the policy for humans: its path, or "built-in default".
func (p *Policy) Describe() string {
	if p.Path == "" {
		return "the built-in default policy"
	}
	return p.Path
}

// Source is where the policy came from, for the audit log: its absolute
// path, or "built-in" for the default.
func (p *Policy) Source() string {
	if p.Path == "" {
		return "built-in"
	}
	if abs, err := filepath.Abs(p.Path); err == nil {
		return abs
	}
	return p.Path
}

// LoadErrors splits a Load error into its one-line problems.
func LoadErrors(err error) []string {
	var multi interface{ Unwrap() []error }
	if errors.As(err, &multi) {
		var out []string
		for _, e := range multi.Unwrap() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// WriteExplanation prints a decision for humans: the verdict of the whole
// script with its reason, then each part, most restrictive first.
func WriteExplanation(w io.Writer, d Decision) error {
	if _, err := fmt.Fprintf(w, "%s: %s\n", d.Verdict, Visible(d.Reason)); err != nil {
		return err
	}
	parts := append([]Part(nil), d.Parts...)
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].Verdict > parts[j].Verdict })
	width := 0
	for _, p := range parts {
		width = max(width, len(Visible(strings.Join(p.Argv, " "))))
	}
	width = min(width, 48)
	for _, p := range parts {
		detail := p.Rule
		if p.Pattern != "" {
			detail += fmt.Sprintf(" %q", p.Pattern)
		}
		if p.Note != "" {
			detail += " (" + p.Note + ")"
		}
		if p.Why != "" {
			detail += ": " + p.Why
		}
		if _, err := fmt.Fprintf(w, "  %-5s %-*s  %s\n", p.Verdict, width, Visible(strings.Join(p.Argv, " ")), detail); err != nil {
			return err
		}
	}
	return nil
}

// WriteExplanationJSON prints the decision as docs/DESIGN.md's explain JSON.
func WriteExplanationJSON(w io.Writer, d Decision) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(d)
}
