package policy

import (
	"strings"
	"testing"
)

// fakeHazards installs a hazard check for the test: .zed/tasks.json and
// .tool-versions are hazards.
func fakeHazards(t *testing.T) {
	SetHostHazard(func(rel string) string {
		switch rel {
		case ".zed/tasks.json", ".tool-versions":
			return rel + " is run or loaded by host tools"
		}
		return ""
	})
	t.Cleanup(func() { SetHostHazard(nil) })
}

// A literal files.write.allow entry that comes first for a hazard path
// lifts it (staging promotes it): Within and Diff count it as looser,
// naming the hazard, unless the boundary lifts it too; a wildcard entry
// or one after "**" lifts nothing.
func TestLiteralAllowLiftingAHazardIsLooser(t *testing.T) {
	fakeHazards(t)
	def := Default()
	lift := parseT(t, "lift.yaml", "version: 1\nfiles:\n  write:\n    allow: [\".zed/tasks.json\", \"**\", \"/tmp/**\"]\n")
	r := Within(lift, def, nil)
	var f *Finding
	for i := range r.Looser {
		if r.Looser[i].Field == "files.write.allow[0]" {
			f = &r.Looser[i]
		}
	}
	if f == nil || !strings.Contains(f.What, ".zed/tasks.json is run or loaded by host tools") || !strings.Contains(f.String(), "write") {
		t.Fatalf("lifting a hazard is not looser: %+v", r)
	}
	if len(r.Looser) != 1 {
		t.Errorf("more than the lifting found: %+v", r.Looser)
	}
	if r := Within(lift, lift, nil); !r.Holds() {
		t.Errorf("a boundary that lifts it too: %+v", r.Looser)
	}
	d := Diff(def, lift, nil)
	if len(d.Looser) != 1 || !strings.Contains(d.Looser[0].What, "host hazard") {
		t.Errorf("diff default lift: %+v", d.Looser)
	}
	if d := Diff(lift, def, nil); len(d.Stricter) != 1 || !strings.Contains(d.Stricter[0].What, "NEW holds the host hazard at .zed/tasks.json") {
		t.Errorf("diff lift default: %+v", d.Stricter)
	}
	for _, src := range []string{
		"version: 1\nfiles:\n  write:\n    allow: [..., \".zed/tasks.json\"]\n",          // after "**": not the first match
		"version: 1\nfiles:\n  write:\n    allow: [\".zed/*.json\", \"**\"]\n",           // a wildcard
		"version: 1\nfiles:\n  write:\n    allow: [\"src/a.go\", \"**\", \"/tmp/**\"]\n", // not a hazard
	} {
		if r := Within(parseT(t, "n.yaml", src), def, nil); !r.Holds() {
			t.Errorf("%q: %+v", src, r.Looser)
		}
	}
}
