package policy

import (
	"bytes"

	agentbox "github.com/agentbox/agentbox"
	"gopkg.in/yaml.v3"
)

// A policy file layers on the built-in default (policy.example.yaml):
// mappings merge key by key, so what the file does not mention keeps the
// default's value (deny rules, files.read.deny, audit.redact, ...); a
// scalar or a list the file names replaces the default's, except a list
// whose first element is ExtendMarker, which adds the file's elements to
// the default's list. "extends: none" at the top starts from nothing.

// ExtendMarker, as the first element of a list (unquoted), keeps the
// default's list and adds the file's elements after it:
//
//	commands:
//	  allow: [..., "docker ps"]
const ExtendMarker = "..."

// defaultLabel names the built-in default in the errors of its nodes.
const defaultLabel = "policy.example.yaml (the built-in default)"

// extendsNone reports whether the document's top mapping says
// "extends: none".
func extendsNone(top *yaml.Node) bool {
	if top.Kind != yaml.MappingNode {
		return false
	}
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "extends" {
			v := top.Content[i+1]
			return v.Kind == yaml.ScalarNode && v.Value == "none"
		}
	}
	return false
}

// hasKey reports whether a mapping node has key.
func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

// defaultTree is the built-in default's top mapping, freshly decoded (the
// loader keeps pointers into it).
func defaultTree() *yaml.Node {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(agentbox.DefaultPolicy)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		panic("policy: the built-in default policy is not YAML")
	}
	return doc.Content[0]
}

// markBase records every node of the default's tree, so that a problem
// found in one is blamed on the default, not on the file.
func (l *loader) markBase(n *yaml.Node) {
	if l.base == nil {
		l.base = map[*yaml.Node]bool{}
	}
	l.base[n] = true
	for _, c := range n.Content {
		l.markBase(c)
	}
}

// isMarker reports whether n is the unquoted ExtendMarker.
func isMarker(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Style == 0 && n.Value == ExtendMarker
}

// layer returns over laid on base (nil: nothing below), at field f.
// Neither tree is modified.
func (l *loader) layer(base, over *yaml.Node, f string) *yaml.Node {
	switch over.Kind {
	case yaml.MappingNode:
		if base == nil || base.Kind != yaml.MappingNode {
			base = nil
		}
		out := *over
		out.Content = nil
		first := map[string]int{} // key -> index of its first pair in over
		for j := 0; j+1 < len(over.Content); j += 2 {
			if _, dup := first[over.Content[j].Value]; !dup {
				first[over.Content[j].Value] = j
			}
		}
		used := map[int]bool{}
		if base != nil {
			for i := 0; i+1 < len(base.Content); i += 2 {
				k, v := base.Content[i], base.Content[i+1]
				j, ok := first[k.Value]
				if !ok {
					out.Content = append(out.Content, k, v)
					continue
				}
				used[j] = true
				out.Content = append(out.Content, over.Content[j], l.layer(v, over.Content[j+1], sub(f, k.Value)))
			}
		}
		for j := 0; j+1 < len(over.Content); j += 2 {
			if !used[j] {
				k := over.Content[j]
				out.Content = append(out.Content, k, l.layer(nil, over.Content[j+1], sub(f, k.Value)))
			}
		}
		return &out
	case yaml.SequenceNode:
		for i, it := range over.Content {
			if i > 0 && isMarker(it) {
				l.errorf(it, f, "%s adds to the built-in default's list only as the first element; move it first, or quote it (\"...\") to mean the string", ExtendMarker)
			}
		}
		if len(over.Content) == 0 || !isMarker(over.Content[0]) {
			return over
		}
		switch {
		case base == nil && l.fromScratch:
			l.errorf(over.Content[0], f, "%s adds to the built-in default's list, but this file says extends: none; remove the %s", ExtendMarker, ExtendMarker)
			return over
		case base == nil:
			l.errorf(over.Content[0], f, "%s adds to the built-in default's list, but the default has no %s; remove the %s (see: agentbox policy show-default)", ExtendMarker, f, ExtendMarker)
			return over
		case base.Kind != yaml.SequenceNode:
			l.errorf(over.Content[0], f, "%s adds to the built-in default's list, but the default's %s is %s, not a list", ExtendMarker, f, describe(base))
			return over
		}
		out := *over
		out.Content = append(append([]*yaml.Node{}, base.Content...), over.Content[1:]...)
		return &out
	case yaml.ScalarNode:
		if isNull(over) && base != nil && base.Kind == yaml.MappingNode {
			return base // an empty mapping changes nothing
		}
	}
	return over
}

func sub(f, key string) string {
	if f == "" {
		return key
	}
	return f + "." + key
}
