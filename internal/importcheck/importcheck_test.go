package importcheck

import (
	"strings"
	"testing"
)

func TestFile(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string // import paths reported
	}{
		{"grouped", "package x\nimport (\n\t\"fmt\"\n\t\"os\"\n\n\t\"example.com/a\"\n\n\t\"example.com/b\"\n)\n", nil},
		{"std only", "package x\nimport \"fmt\"\n", nil},
		{"mixed", "package x\nimport (\n\t\"fmt\"\n\t\"example.com/a\"\n\t\"os\"\n)\n", []string{"example.com/a"}},
		{"std last", "package x\nimport (\n\t\"example.com/a\"\n\n\t\"fmt\"\n)\n", []string{"fmt"}},
		{"named and doc", "package x\nimport (\n\t// why\n\tf \"fmt\"\n\n\tsdk \"example.com/a\"\n)\n", nil},
		{"two decls", "package x\nimport \"example.com/a\"\nimport \"fmt\"\n", []string{"fmt"}},
	} {
		ps, err := File(tc.name+".go", []byte(tc.src))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Path)
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: reported %v, want %v (%v)", tc.name, got, tc.want, ps)
		}
	}
}
