package policy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"

	agentbox "github.com/agentbox/agentbox"
	"gopkg.in/yaml.v3"
)

// maxPolicyBytes bounds the size of a policy file.
const maxPolicyBytes = 1 << 20

// LoadError is one problem of a policy file, at file:line:col, in the field
// with the given path (like "commands.deny[1].match").
type LoadError struct {
	File      string
	Line, Col int
	Field     string
	Msg       string
}

func (e *LoadError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
		if e.Col > 0 {
			loc += ":" + strconv.Itoa(e.Col)
		}
	}
	if e.Field != "" {
		return loc + ": " + e.Field + ": " + e.Msg
	}
	return loc + ": " + e.Msg
}

// Load reads and validates a policy file. Problems of the file are
// returned as errors.Join of *LoadError, one per problem, in file order.
func Load(path string) (*Policy, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w (check the --policy path)", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPolicyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("policy: read %s: %w", path, err)
	}
	return parse(path, data, true, true)
}

// Default returns the built-in default policy (policy.example.yaml). Its
// Path is "".
func Default() *Policy {
	p, err := parse("policy.example.yaml", agentbox.DefaultPolicy, false, false)
	if err != nil {
		panic("policy: the built-in default policy is invalid: " + err.Error())
	}
	p.Path = ""
	return p
}

// Parse validates a policy held in memory; name is used in error messages
// and as the policy's Path.
//
// Parse does no I/O: the host-side sources a policy names (secret files
// and commands, network.upstream_ca) are checked by Load only, on the host
// (the in-sandbox executor parses the same bytes without them).
func Parse(name string, data []byte) (*Policy, error) { return parse(name, data, false, true) }

// parse validates a policy; layered lays it on the built-in default
// (unless it says extends: none; see layer).
func parse(name string, data []byte, host, layered bool) (*Policy, error) {
	l := &loader{file: name, host: host}
	if len(data) > maxPolicyBytes {
		l.errs = append(l.errs, &LoadError{File: name, Msg: "the policy file is larger than 1 MiB; policies are small, check that this is the right file"})
		return nil, l.err()
	}
	sum := sha256.Sum256(data)
	p := newPolicy()
	p.Path = name
	p.SHA256 = hex.EncodeToString(sum[:])

	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if err == io.EOF {
			l.errs = append(l.errs, &LoadError{File: name, Line: 1, Col: 1, Msg: "the policy is empty; start it with \"version: 1\""})
		} else {
			l.yamlErr(err, data)
		}
		return nil, l.err()
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err != io.EOF {
		line := 0
		if err == nil {
			line = extra.Line
		}
		l.errs = append(l.errs, &LoadError{File: name, Line: line, Msg: "more than one YAML document; a policy is one document (remove the \"---\")"})
		return nil, l.err()
	}
	if len(doc.Content) == 0 {
		l.errs = append(l.errs, &LoadError{File: name, Line: 1, Col: 1, Msg: "the policy is empty; start it with \"version: 1\""})
		return nil, l.err()
	}
	top := doc.Content[0]
	if top.Kind == yaml.MappingNode && !hasKey(top, "version") {
		l.errorf(top, "version", "missing; add \"version: 1\" at the top")
		return nil, l.err()
	}
	if layered {
		l.fromScratch = extendsNone(top)
		p.fromScratch = l.fromScratch
		var base *yaml.Node
		if !l.fromScratch {
			base = defaultTree()
			l.markBase(base)
		}
		top = l.layer(base, top, "")
	}
	l.top(top, p)
	l.checkExamples(p)
	l.checkNetwork(p)
	if len(l.errs) > 0 {
		return nil, l.err()
	}
	return p, nil
}

type loader struct {
	file      string
	errs      []*LoadError
	examples  []example
	netChecks []netCheck          // see checkNetwork
	host      bool                // check host-side sources (files, commands) too
	base      map[*yaml.Node]bool // the built-in default's nodes (layer)
	// fromScratch: the file says extends: none
	fromScratch bool
}

type example struct {
	rule     *rule
	field    string
	node     *yaml.Node
	text     string
	negative bool
}

func (l *loader) errorf(n *yaml.Node, field, format string, args ...any) {
	e := &LoadError{File: l.file, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
		if l.base[n] {
			e.File = defaultLabel
		}
	}
	l.errs = append(l.errs, e)
}

func (l *loader) err() error {
	sort.SliceStable(l.errs, func(i, j int) bool {
		a, b := l.errs[i], l.errs[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	errs := make([]error, len(l.errs))
	for i, e := range l.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (l *loader) yamlErr(err error, data []byte) {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		l.errs = append(l.errs, &LoadError{File: l.file, Line: line, Col: yamlErrCol(data, line), Msg: "invalid YAML: " + m[2]})
		return
	}
	l.errs = append(l.errs, &LoadError{File: l.file, Msg: "invalid YAML: " + msg})
}

// yamlErrCol is the column to blame on line (1-based) of data, which the
// YAML parser names without a column: its first tab (YAML forbids tabs in
// indentation), else its first non-blank character.
func yamlErrCol(data []byte, line int) int {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) {
		return 0
	}
	l := lines[line-1]
	if i := bytes.IndexByte(l, '\t'); i >= 0 {
		return i + 1
	}
	if i := bytes.IndexFunc(l, func(r rune) bool { return r != ' ' && r != '\r' }); i >= 0 {
		return i + 1
	}
	return 1
}

func (l *loader) top(n *yaml.Node, p *Policy) {
	sawVersion := false
	l.mapping(n, "", map[string]func(string, *yaml.Node){
		"version": func(f string, v *yaml.Node) {
			sawVersion = true
			if i, ok := l.int(f, v); ok && i != 1 {
				l.errorf(v, f, "unsupported version %d; this agentbox reads version 1", i)
			}
		},
		"sandbox":  func(f string, v *yaml.Node) { l.sandbox(f, v, &p.Sandbox) },
		"commands": func(f string, v *yaml.Node) { l.commands(f, v, p) },
		"files": func(f string, v *yaml.Node) {
			l.mapping(v, f, map[string]func(string, *yaml.Node){
				"read":  func(f string, v *yaml.Node) { l.fileRules(f, v, &p.read) },
				"write": func(f string, v *yaml.Node) { l.fileRules(f, v, &p.write) },
			})
		},
		"audit":   func(f string, v *yaml.Node) { l.audit(f, v, &p.Audit) },
		"network": func(f string, v *yaml.Node) { l.network(f, v, &p.net) },
		"secrets": func(f string, v *yaml.Node) { l.secrets(f, v, p) },
		"extends": func(f string, v *yaml.Node) {
			if s, ok := l.str(f, v); ok && s != "none" && s != "default" {
				l.errorf(v, f, "%q: write extends: none to start from nothing, or leave it out to layer on the built-in default", s)
			}
		},
	})
	if !sawVersion && n.Kind == yaml.MappingNode {
		l.errorf(n, "version", "missing; add \"version: 1\" at the top")
	}
}

func (l *loader) commands(f string, n *yaml.Node, p *Policy) {
	l.mapping(n, f, map[string]func(string, *yaml.Node){
		"default": func(f string, v *yaml.Node) { l.verdict(f, v, &p.cmd.def) },
		"dynamic": func(f string, v *yaml.Node) { l.verdict(f, v, &p.cmd.dynamic) },
		"unknown_binaries": func(f string, v *yaml.Node) {
			l.verdict(f, v, &p.cmd.unknown)
		},
		"allow": func(f string, v *yaml.Node) { p.cmd.lists[Allow] = l.rules(f, v, Allow) },
		"ask":   func(f string, v *yaml.Node) { p.cmd.lists[Ask] = l.rules(f, v, Ask) },
		"deny":  func(f string, v *yaml.Node) { p.cmd.lists[Deny] = l.rules(f, v, Deny) },
	})
}

func (l *loader) verdict(f string, n *yaml.Node, dst *Verdict) {
	if s, ok := l.str(f, n); ok {
		v, ok := parseVerdict(s)
		if !ok {
			l.errorf(n, f, "%q is not a verdict; use allow, ask or deny", s)
			return
		}
		*dst = v
	}
}

// rules loads a list of command rules: strings, or mappings with match,
// why, examples and not_examples.
func (l *loader) rules(f string, n *yaml.Node, v Verdict) []*rule {
	var out []*rule
	for i, it := range l.seq(f, n) {
		rf := fmt.Sprintf("%s[%d]", f, i)
		r := &rule{id: rf, verdict: v}
		matchNode, matchField := it, rf
		var exNodes, notNodes []*yaml.Node
		var exField, notField string
		switch it.Kind {
		case yaml.MappingNode:
			matchNode = nil
			l.mapping(it, rf, map[string]func(string, *yaml.Node){
				"match": func(f string, v *yaml.Node) { matchNode, matchField = v, f },
				"why": func(f string, v *yaml.Node) {
					if s, ok := l.str(f, v); ok {
						r.why = s
					}
				},
				"examples":     func(f string, v *yaml.Node) { exNodes, exField = l.seq(f, v), f },
				"not_examples": func(f string, v *yaml.Node) { notNodes, notField = l.seq(f, v), f },
			})
			if matchNode == nil {
				l.errorf(it, rf+".match", "missing; write the command words to match, like match: \"git push\"")
				continue
			}
		case yaml.ScalarNode:
		default:
			l.errorf(it, rf, "must be a string or a mapping with match, why, examples and not_examples")
			continue
		}
		s, ok := l.str(matchField, matchNode)
		if !ok {
			continue
		}
		words, err := parseRuleWords(s)
		if err != nil {
			l.errorf(matchNode, matchField, "%v", err)
			continue
		}
		r.match, r.words = s, words
		out = append(out, r)
		for neg, nodes := range [][]*yaml.Node{exNodes, notNodes} {
			field := exField
			if neg == 1 {
				field = notField
			}
			for j, en := range nodes {
				ef := fmt.Sprintf("%s[%d]", field, j)
				if t, ok := l.str(ef, en); ok {
					l.examples = append(l.examples, example{rule: r, field: ef, node: en, text: t, negative: neg == 1})
				}
			}
		}
	}
	return out
}

// checkExamples checks that every example decides with its rule matching,
// and that no not_example matches its rule.
func (l *loader) checkExamples(p *Policy) {
	for _, ex := range l.examples {
		a := p.analyse(ex.text)
		matched := false
		for _, cl := range a.lines {
			if cl != nil && ex.rule.matches(cl, ex.rule.verdict != Allow) {
				matched = true
				break
			}
		}
		switch {
		case ex.negative && matched:
			l.errorf(ex.node, ex.field, "%q matches %q; a not_example must not match its rule", ex.text, ex.rule.match)
		case ex.negative:
		case !matched:
			l.errorf(ex.node, ex.field, "%q does not match %q", ex.text, ex.rule.match)
		default:
			if d := combine(a.parts); d.Verdict != ex.rule.verdict {
				l.errorf(ex.node, ex.field, "%q matches %q but is decided %s: %s", ex.text, ex.rule.match, d.Verdict, d.Reason)
			}
		}
	}
}

func (l *loader) fileRules(f string, n *yaml.Node, dst *fileRules) {
	l.mapping(n, f, map[string]func(string, *yaml.Node){
		"allow": func(f string, v *yaml.Node) { dst.allow = l.globs(f, v) },
		"deny":  func(f string, v *yaml.Node) { dst.deny = l.globs(f, v) },
	})
}

func (l *loader) globs(f string, n *yaml.Node) []string {
	out := []string{}
	for i, it := range l.seq(f, n) {
		gf := fmt.Sprintf("%s[%d]", f, i)
		s, ok := l.str(gf, it)
		if !ok {
			continue
		}
		g, err := cleanGlob(s)
		if err != nil {
			l.errorf(it, gf, "%v", err)
			continue
		}
		out = append(out, g)
	}
	return out
}

func (l *loader) audit(f string, n *yaml.Node, dst *AuditSettings) {
	l.mapping(n, f, map[string]func(string, *yaml.Node){
		"redact": func(f string, v *yaml.Node) {
			dst.Redact = nil
			for i, it := range l.seq(f, v) {
				rf := fmt.Sprintf("%s[%d]", f, i)
				s, ok := l.str(rf, it)
				if !ok {
					continue
				}
				re, err := regexp.Compile(s)
				if err != nil {
					l.errorf(it, rf, "invalid regular expression (Go RE2 syntax): %v", err)
					continue
				}
				if re.MatchString("") {
					l.errorf(it, rf, "%q matches the empty string; it would redact everywhere", s)
					continue
				}
				dst.Redact = append(dst.Redact, re)
			}
		},
		"preview_bytes": func(f string, v *yaml.Node) {
			if b, ok := l.size(f, v); ok {
				dst.PreviewBytes = b
			}
		},
		"checkpoints": func(f string, v *yaml.Node) {
			if s, ok := l.str(f, v); ok {
				if !filepath.IsAbs(s) {
					l.errorf(v, f, "%q: give an absolute directory (outside every workspace)", s)
					return
				}
				dst.Checkpoints = filepath.Clean(s)
			}
		},
	})
}
