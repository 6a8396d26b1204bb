package ocsf_test

// A validator for OCSF events against the official schema's source
// definitions (testdata/ocsf-schema: the ocsf/ocsf-schema repository at tag
// 1.3.0, Apache-2.0, LICENSE kept beside it). It compiles classes and
// objects the way the schema's compiler does (extends, $include of
// includes and profiles, class-level overrides) and checks what the
// ocsf-server validator checks: the class exists, required attributes are
// present, no attribute the schema does not define (an attribute that only
// a profile adds is undefined unless metadata.profiles lists the profile),
// types (base types, arrays, objects, regexes of derived types), enums,
// enum captions beside their ids, at_least_one/just_one constraints,
// type_uid = class_uid*100+activity_id, category_uid and metadata.version.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const schemaDir = "../testdata/ocsf-schema"

type defAttr struct {
	Requirement string                     `json:"requirement"`
	Enum        map[string]json.RawMessage `json:"enum"`
	Type        string                     `json:"type"`
	IsArray     *bool                      `json:"is_array"`
	Sibling     string                     `json:"sibling"`
}

type defItem struct {
	Name        string                     `json:"name"`
	Caption     string                     `json:"caption"`
	Extends     string                     `json:"extends"`
	Category    string                     `json:"category"`
	UID         *int                       `json:"uid"`
	Meta        string                     `json:"meta"`
	Attributes  map[string]json.RawMessage `json:"attributes"`
	Constraints map[string][]string        `json:"constraints"`
}

// attr is one compiled attribute of a class or object.
type attr struct {
	requirement string
	enum        map[string]string // value -> caption
	typ         string
	isArray     bool
	sibling     string
	profiles    []string // non-nil: only defined when one of these is declared
}

type item struct {
	name        string
	uid         int
	category    int
	attrs       map[string]*attr
	constraints map[string][]string
}

type schema struct {
	t          *testing.T
	dict       map[string]defAttr
	types      map[string]map[string]any
	cats       map[string]int
	catCaption map[int]string
	classes    map[string]string // name -> file
	objects    map[string]*item
	byUID      map[int]*item
	compiled   map[string]*item
	used       map[string]bool // files read (to keep the test data minimal)
}

func readJSON(t *testing.T, s *schema, rel string, v any) {
	t.Helper()
	if s != nil {
		s.used[rel] = true
	}
	b, err := os.ReadFile(filepath.Join(schemaDir, rel))
	if err != nil {
		t.Fatalf("schema: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("schema %s: %v", rel, err)
	}
}

func loadSchema(t *testing.T) *schema {
	s := &schema{t: t, cats: map[string]int{}, classes: map[string]string{}, objects: map[string]*item{}, byUID: map[int]*item{}, compiled: map[string]*item{}, used: map[string]bool{}}
	var dict struct {
		Attributes map[string]defAttr `json:"attributes"`
		Types      struct {
			Attributes map[string]map[string]any `json:"attributes"`
		} `json:"types"`
	}
	readJSON(t, s, "dictionary.json", &dict)
	s.dict, s.types = dict.Attributes, dict.Types.Attributes
	var cats struct {
		Attributes map[string]struct {
			UID     int    `json:"uid"`
			Caption string `json:"caption"`
		} `json:"attributes"`
	}
	readJSON(t, s, "categories.json", &cats)
	s.catCaption = map[int]string{0: "Uncategorized"}
	for k, v := range cats.Attributes {
		s.cats[k] = v.UID
		s.catCaption[v.UID] = v.Caption
	}
	var version struct {
		Version string `json:"version"`
	}
	readJSON(t, s, "version.json", &version)
	if version.Version != "1.3.0" {
		t.Fatalf("schema test data is version %s, want 1.3.0", version.Version)
	}
	err := filepath.Walk(filepath.Join(schemaDir, "events"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || !strings.HasSuffix(p, ".json") {
			return err
		}
		rel, _ := filepath.Rel(schemaDir, p)
		var d defItem
		readJSON(t, nil, rel, &d)
		s.classes[d.Name] = rel
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name := range s.classes {
		c := s.class(name)
		if c.uid >= 0 {
			s.byUID[c.uid] = c
		}
	}
	return s
}

// class compiles the event class name (uid -1 for abstract ones).
func (s *schema) class(name string) *item {
	if c := s.compiled["class:"+name]; c != nil {
		return c
	}
	var d defItem
	readJSON(s.t, s, s.classes[name], &d)
	it := &item{name: name, uid: -1, attrs: map[string]*attr{}}
	cat := d.Category
	if d.Extends != "" {
		parent := s.class(d.Extends)
		it.attrs = cloneAttrs(parent.attrs)
		it.constraints = parent.constraints
		it.category = parent.category
	}
	if cat != "" && cat != "other" {
		it.category = s.cats[cat]
	}
	if d.UID != nil {
		it.uid = it.category*1000 + *d.UID
	} else if name == "base_event" {
		it.uid = 0
	}
	s.merge(it, d)
	// As the compiler does: the class's own uid and category are the only
	// values of class_uid and category_uid.
	if it.uid >= 0 {
		it.attrs["class_uid"].enum = map[string]string{fmt.Sprint(it.uid): d.Caption}
		it.attrs["category_uid"].enum = map[string]string{fmt.Sprint(it.category): s.catCaption[it.category]}
	}
	s.compiled["class:"+name] = it
	return it
}

func (s *schema) object(name string) *item {
	if o := s.compiled["object:"+name]; o != nil {
		return o
	}
	rel := "objects/" + name + ".json"
	if _, err := os.Stat(filepath.Join(schemaDir, rel)); err != nil {
		s.t.Fatalf("schema: no object %q", name)
	}
	var d defItem
	readJSON(s.t, s, rel, &d)
	it := &item{name: name, attrs: map[string]*attr{}}
	if d.Extends != "" && d.Extends != "object" {
		parent := s.object(d.Extends)
		it.attrs = cloneAttrs(parent.attrs)
		it.constraints = parent.constraints
	}
	s.merge(it, d)
	s.compiled["object:"+name] = it
	return it
}

func cloneAttrs(m map[string]*attr) map[string]*attr {
	out := make(map[string]*attr, len(m))
	for k, v := range m {
		c := *v
		out[k] = &c
	}
	return out
}

// merge applies d's includes, then its own attributes, over it.
func (s *schema) merge(it *item, d defItem) {
	if d.Constraints != nil {
		it.constraints = d.Constraints
	}
	own := map[string]defAttr{}
	for k, raw := range d.Attributes {
		if k == "$include" {
			continue
		}
		var a defAttr
		if err := json.Unmarshal(raw, &a); err != nil {
			s.t.Fatalf("schema %s.%s: %v", d.Name, k, err)
		}
		own[k] = a
	}
	if raw, ok := d.Attributes["$include"]; ok {
		var incs []string
		if err := json.Unmarshal(raw, &incs); err != nil {
			s.t.Fatal(err)
		}
		for _, inc := range incs {
			var id defItem
			readJSON(s.t, s, inc, &id)
			for k, raw := range id.Attributes {
				var a defAttr
				if err := json.Unmarshal(raw, &a); err != nil {
					s.t.Fatal(err)
				}
				_, inOwn := own[k]
				prev, inBase := it.attrs[k]
				s.apply(it, k, a)
				switch {
				case id.Meta != "profile" || inOwn:
				case !inBase:
					it.attrs[k].profiles = []string{id.Name}
				case prev.profiles != nil:
					it.attrs[k].profiles = append(append([]string(nil), prev.profiles...), id.Name)
				}
			}
		}
	}
	for k, a := range own {
		s.apply(it, k, a)
		it.attrs[k].profiles = nil
	}
}

func (s *schema) apply(it *item, k string, a defAttr) {
	cur := it.attrs[k]
	if cur == nil {
		da, ok := s.dict[k]
		if !ok {
			s.t.Fatalf("schema: %s.%s is not in the dictionary", it.name, k)
		}
		cur = &attr{typ: da.Type, isArray: da.IsArray != nil && *da.IsArray, sibling: da.Sibling, enum: map[string]string{}}
		addEnum(cur.enum, da.Enum)
		it.attrs[k] = cur
	}
	if a.Requirement != "" {
		cur.requirement = a.Requirement
	}
	if a.Type != "" {
		cur.typ = a.Type
	}
	if a.IsArray != nil {
		cur.isArray = *a.IsArray
	}
	if a.Sibling != "" {
		cur.sibling = a.Sibling
	}
	e := map[string]string{}
	for k, v := range cur.enum {
		e[k] = v
	}
	addEnum(e, a.Enum)
	cur.enum = e
}

func addEnum(dst map[string]string, src map[string]json.RawMessage) {
	for k, raw := range src {
		var v struct {
			Caption string `json:"caption"`
		}
		json.Unmarshal(raw, &v)
		dst[k] = v.Caption
	}
}

// validate returns every problem of one event.
func (s *schema) validate(ev map[string]any) []string {
	var errs []string
	num := func(k string) int {
		f, _ := ev[k].(float64)
		return int(f)
	}
	cls, ok := s.byUID[num("class_uid")]
	if !ok {
		return []string{fmt.Sprintf("class_uid %v is not a class of OCSF 1.3.0", ev["class_uid"])}
	}
	var profiles []string
	if md, ok := ev["metadata"].(map[string]any); ok {
		if v, _ := md["version"].(string); v != "1.3.0" {
			errs = append(errs, fmt.Sprintf("metadata.version %q, want 1.3.0", v))
		}
		if ps, ok := md["profiles"].([]any); ok {
			for _, p := range ps {
				ps, _ := p.(string)
				if _, err := os.Stat(filepath.Join(schemaDir, "profiles", ps+".json")); err != nil {
					errs = append(errs, fmt.Sprintf("metadata.profiles: unknown profile %q", ps))
				}
				profiles = append(profiles, ps)
			}
		}
	}
	if want := num("class_uid")*100 + num("activity_id"); num("type_uid") != want {
		errs = append(errs, fmt.Sprintf("type_uid %v, want %d", ev["type_uid"], want))
	}
	if num("category_uid") != cls.category {
		errs = append(errs, fmt.Sprintf("category_uid %v, want %d", ev["category_uid"], cls.category))
	}
	s.check(cls, ev, "", profiles, &errs)
	return errs
}

func visible(a *attr, profiles []string) bool {
	if a.profiles == nil {
		return true
	}
	for _, p := range a.profiles {
		for _, q := range profiles {
			if p == q {
				return true
			}
		}
	}
	return false
}

func (s *schema) check(it *item, v map[string]any, path string, profiles []string, errs *[]string) {
	add := func(f string, a ...any) { *errs = append(*errs, path+fmt.Sprintf(f, a...)) }
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a, ok := it.attrs[k]
		switch {
		case !ok:
			add("%s: not an attribute of %s", k, it.name)
			continue
		case !visible(a, profiles):
			add("%s: attribute of profile %v, which metadata.profiles does not list", k, a.profiles)
			continue
		}
		s.value(a, k, v[k], path+k, profiles, errs)
		if a.sibling != "" && len(a.enum) > 0 {
			if capt, ok := v[a.sibling].(string); ok {
				if want, known := a.enum[fmt.Sprint(v[k])]; known && fmt.Sprint(v[k]) != "99" && capt != want {
					add("%s: %q is not the caption of %s %v (%q)", a.sibling, capt, k, v[k], want)
				}
			}
		}
	}
	for k, a := range it.attrs {
		if _, ok := v[k]; !ok && a.requirement == "required" && visible(a, profiles) {
			add("%s: required by %s, missing", k, it.name)
		}
	}
	for kind, names := range it.constraints {
		n := 0
		for _, k := range names {
			if _, ok := v[k]; ok {
				n++
			}
		}
		if (kind == "at_least_one" && n == 0) || (kind == "just_one" && n != 1) {
			add("constraint %s %v of %s failed", kind, names, it.name)
		}
	}
}

func (s *schema) value(a *attr, k string, v any, path string, profiles []string, errs *[]string) {
	add := func(f string, args ...any) { *errs = append(*errs, path+": "+fmt.Sprintf(f, args...)) }
	if a.isArray {
		arr, ok := v.([]any)
		if !ok {
			add("want an array")
			return
		}
		for i, e := range arr {
			one := *a
			one.isArray = false
			s.value(&one, k, e, fmt.Sprintf("%s[%d]", path, i), profiles, errs)
		}
		return
	}
	if len(a.enum) > 0 {
		if _, ok := a.enum[fmt.Sprint(v)]; !ok {
			add("%v is not in the enum", v)
		}
	}
	if _, isType := s.types[a.typ]; !isType {
		obj, ok := v.(map[string]any)
		if !ok {
			add("want an object %s", a.typ)
			return
		}
		if a.typ == "object" { // the generic object (unmapped): any members
			return
		}
		s.check(s.object(a.typ), obj, path+".", profiles, errs)
		return
	}
	base, t := a.typ, s.types[a.typ]
	if re, ok := t["regex"].(string); ok {
		if str, ok := v.(string); !ok || !regexp.MustCompile(re).MatchString(str) {
			add("%q does not match the %s format", v, a.typ)
		}
	}
	if ml, ok := t["max_len"].(float64); ok {
		if str, _ := v.(string); len(str) > int(ml) {
			add("longer than %v", ml)
		}
	}
	for {
		next, _ := s.types[base]["type"].(string)
		if next == "" {
			break
		}
		base = next
	}
	f, isNum := v.(float64)
	switch base {
	case "string_t":
		if _, ok := v.(string); !ok {
			add("want a string, got %T", v)
		}
	case "integer_t", "long_t", "timestamp_t":
		if !isNum || f != math.Trunc(f) {
			add("want an integer, got %v", v)
		}
	case "float_t":
		if !isNum {
			add("want a number")
		}
	case "boolean_t":
		if _, ok := v.(bool); !ok {
			add("want a boolean")
		}
	case "json_t":
	default:
		add("unknown type %s", base)
	}
}
