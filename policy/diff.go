package policy

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// DiffReport is what NEW decides differently from OLD, grouped by effect:
// Looser are the findings where NEW is less restrictive than OLD, Stricter
// where it is more. Each is a Within finding in one direction, with a
// concrete example where one exists.
type DiffReport struct {
	Old      string    `json:"old"`
	New      string    `json:"new"`
	Looser   []Finding `json:"looser"`
	Stricter []Finding `json:"stricter"`
	Unproven []Finding `json:"unproven,omitempty"`
}

// Diff compares old and new both ways (see Within): probes are extra
// concrete actions, such as the calls of audit logs.
func Diff(old, new *Policy, probes []Probe) DiffReport {
	lo := Within(new, old, probes)
	st := Within(old, new, probes)
	// In the stricter direction the roles swap: the example's "new" is OLD.
	for i := range st.Looser {
		f := &st.Looser[i]
		if e := f.Example; e != nil && e.Source == hazardSource {
			f.What = fmt.Sprintf("NEW holds the host hazard at %s that OLD's literal %s lifts", e.Subject, f.Field)
			continue
		}
		if e := f.Example; e != nil {
			x := *e
			x.New, x.NewRule, x.Boundary, x.BoundaryRule = e.Boundary, e.BoundaryRule, e.New, e.NewRule
			f.Example = &x
			f.What = fmt.Sprintf("NEW decides %s by %s where OLD decides %s by %s", x.New, orDefault(x.NewRule), x.Boundary, orDefault(x.BoundaryRule))
			continue
		}
		f.What = stricterWhat(f.What)
	}
	d := DiffReport{Old: old.Describe(), New: new.Describe(), Looser: lo.Looser, Stricter: st.Looser}
	d.Unproven = append(append(d.Unproven, lo.Unproven...), st.Unproven...)
	if d.Stricter == nil {
		d.Stricter = []Finding{}
	}
	return d
}

// stricterWhat rewords a settings finding of OLD within NEW for the
// stricter list: there OLD is the looser one.
func stricterWhat(w string) string {
	w = strings.ReplaceAll(w, "(boundary: ", "(NEW: ")
	w = strings.ReplaceAll(w, "the boundary", "NEW")
	return "OLD " + w
}

// Same reports whether the policies decide alike on everything compared.
func (d DiffReport) Same() bool {
	return len(d.Looser) == 0 && len(d.Stricter) == 0 && len(d.Unproven) == 0
}

// WriteText prints the report for a person: one line per finding, the
// example below it, agent-controlled text escaped.
func (d DiffReport) WriteText(w io.Writer) error {
	if d.Same() {
		_, err := fmt.Fprintf(w, "%s and %s decide alike on every field, rule, probe and logged call compared\n", oneLine(d.Old), oneLine(d.New))
		return err
	}
	for _, g := range []struct {
		title string
		fs    []Finding
	}{{"looser (NEW allows or asks what OLD does not)", d.Looser}, {"stricter (NEW refuses or asks what OLD allows)", d.Stricter}, {"not proven either way", d.Unproven}} {
		if len(g.fs) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "%s: %d\n", g.title, len(g.fs)); err != nil {
			return err
		}
		for _, f := range g.fs {
			if err := writeFinding(w, f, "OLD"); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFinding prints one finding and its example; other names the
// policy the example is compared with.
func writeFinding(w io.Writer, f Finding, other string) error {
	if _, err := fmt.Fprintf(w, "  %s: %s\n", f.Field, oneLine(f.What)); err != nil {
		return err
	}
	e := f.Example
	if e == nil {
		return nil
	}
	src := ""
	if e.Source != "" {
		src = " [from " + oneLine(e.Source) + "]"
	}
	more := ""
	if f.More > 0 {
		more = fmt.Sprintf(" (and %d more like it)", f.More)
	}
	_, err := fmt.Fprintf(w, "      e.g. %s %s: NEW %s%s, %s %s%s%s%s\n", e.Kind, oneLine(quoteSubject(e)),
		e.New, ruleSuffix(e.NewRule), other, e.Boundary, ruleSuffix(e.BoundaryRule), src, more)
	return err
}

// WriteText prints a Within report for a person.
func (r Report) WriteText(w io.Writer, newName, boundary string) error {
	if r.Holds() {
		_, err := fmt.Fprintf(w, "ok: %s stays within %s (proven on every field and rule; %d concrete actions decided)\n", oneLine(newName), oneLine(boundary), r.Probes)
		return err
	}
	if len(r.Looser) > 0 {
		if _, err := fmt.Fprintf(w, "%s is looser than %s in %d place(s):\n", oneLine(newName), oneLine(boundary), len(r.Looser)); err != nil {
			return err
		}
		for _, f := range r.Looser {
			if err := writeFinding(w, f, "BOUNDARY"); err != nil {
				return err
			}
		}
	}
	if len(r.Unproven) > 0 {
		if _, err := fmt.Fprintf(w, "not proven (no counterexample found either): %d\n", len(r.Unproven)); err != nil {
			return err
		}
		for _, f := range r.Unproven {
			if err := writeFinding(w, f, "BOUNDARY"); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteJSON writes v indented.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
