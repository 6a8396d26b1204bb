package audit

import (
	"reflect"
	"strings"
	"testing"
)

// Every string of a record is redacted before it is written, whatever
// field it is in (proxy records' paths included): a field added to Record
// and forgotten by the sanitizer fails here.
func TestEveryStringFieldRedacted(t *testing.T) {
	tok := "ghp_" + rep("Zx9Q", 9)
	z := newSanitizer(Options{})
	var r Record
	v := reflect.ValueOf(&r).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.String:
			f.SetString("x " + tok + " y")
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			f.Set(reflect.ValueOf([]string{"x " + tok}))
		}
	}
	r.Args = map[string]any{"command": "echo " + tok, tok: "k"}
	r.Files = []FileChange{{Path: tok, Change: tok}}
	r.Programs = []Program{{Name: tok, Count: 1}}
	c, err := z.record(&r)
	if err != nil {
		t.Fatal(err)
	}
	c.Prev, c.MAC = "", "" // the writer's own, never from the caller
	b, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), tok[4:20]) {
		t.Fatalf("a field kept the token: %s", b)
	}
}
