package policy

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentbox/agentbox/internal/sizes"
	"github.com/agentbox/agentbox/sandbox"
	"gopkg.in/yaml.v3"
)

// mapping walks a YAML mapping, calling the function of each known key.
// Unknown and duplicate keys are errors; a null value is an empty mapping.
func (l *loader) mapping(n *yaml.Node, f string, fields map[string]func(string, *yaml.Node)) {
	if l.alias(n, f) || isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.errorf(n, fieldName(f), "must be a mapping (key: value lines), not %s", describe(n))
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		kf := key
		if f != "" {
			kf = f + "." + key
		}
		if k.Kind != yaml.ScalarNode {
			l.errorf(k, fieldName(f), "keys must be plain words")
			continue
		}
		fn, ok := fields[key]
		if !ok {
			l.errorf(k, kf, "unknown field; known fields here: %s", knownFields(fields))
			continue
		}
		if seen[key] {
			l.errorf(k, kf, "duplicate field; keep one")
			continue
		}
		seen[key] = true
		if l.alias(v, kf) {
			continue
		}
		fn(kf, v)
	}
}

func fieldName(f string) string {
	if f == "" {
		return "(top level)"
	}
	return f
}

func knownFields(fields map[string]func(string, *yaml.Node)) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func (l *loader) alias(n *yaml.Node, f string) bool {
	if n != nil && n.Kind == yaml.AliasNode {
		l.errorf(n, f, "YAML aliases (*name) are not supported in policies; write the value out")
		return true
	}
	return false
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "an empty value"
		}
		return fmt.Sprintf("%q (%s)", n.Value, n.Tag)
	}
	return "an unexpected YAML node"
}

// seq returns the items of a YAML list; a null value is an empty list.
func (l *loader) seq(f string, n *yaml.Node) []*yaml.Node {
	if l.alias(n, f) || isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		l.errorf(n, f, "must be a list, like [a, b], not %s", describe(n))
		return nil
	}
	for i, it := range n.Content {
		if l.alias(it, fmt.Sprintf("%s[%d]", f, i)) {
			return nil
		}
	}
	return n.Content
}

func (l *loader) str(f string, n *yaml.Node) (string, bool) {
	if l.alias(n, f) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		hint := ""
		if n.Kind == yaml.ScalarNode && n.Tag != "!!null" {
			hint = fmt.Sprintf(" (quote it: %q)", n.Value)
		}
		l.errorf(n, f, "must be a string, not %s%s", describe(n), hint)
		return "", false
	}
	return n.Value, true
}

func (l *loader) int(f string, n *yaml.Node) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		l.errorf(n, f, "must be an integer, not %s", describe(n))
		return 0, false
	}
	i, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil {
		l.errorf(n, f, "%q is not an integer in range", n.Value)
		return 0, false
	}
	return i, true
}

func (l *loader) boolean(f string, n *yaml.Node) (bool, bool) {
	if l.alias(n, f) {
		return false, false
	}
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
		l.errorf(n, f, "must be true or false, not %s", describe(n))
		return false, false
	}
	b, err := strconv.ParseBool(n.Value)
	if err != nil {
		l.errorf(n, f, "%q: write true or false", n.Value)
		return false, false
	}
	return b, true
}

func (l *loader) enum(f string, n *yaml.Node, dst *string, options ...string) {
	enum(l, f, n, dst, options...)
}

// enum sets *dst to the scalar at n if it is one of options (a string or a
// typed mode such as sandbox.NetworkMode).
func enum[T ~string](l *loader, f string, n *yaml.Node, dst *T, options ...T) {
	s, ok := l.str(f, n)
	if !ok {
		return
	}
	names := make([]string, len(options))
	for i, o := range options {
		if T(s) == o {
			*dst = o
			return
		}
		names[i] = string(o)
	}
	l.errorf(n, f, "%q is not one of %s", s, strings.Join(names, ", "))
}

// size reads a byte size: an integer, or a number with a unit (16KiB,
// 512MB, 1GiB; k, m, g alone are binary as in docker).
func (l *loader) size(f string, n *yaml.Node) (int64, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!str" && n.Tag != "!!float") {
		l.errorf(n, f, "must be a size like 16KiB, not %s", describe(n))
		return 0, false
	}
	v, err := sizes.Parse(n.Value)
	if err != nil {
		l.errorf(n, f, "%v", err)
		return 0, false
	}
	return v, true
}

func (l *loader) duration(f string, n *yaml.Node) (time.Duration, bool) {
	if n.Kind != yaml.ScalarNode || (n.Tag != "!!str" && n.Tag != "!!int") {
		l.errorf(n, f, "must be a duration like 60s, not %s", describe(n))
		return 0, false
	}
	d, err := time.ParseDuration(n.Value)
	if err != nil || d <= 0 {
		l.errorf(n, f, "%q is not a positive duration; write a number with a unit, like 60s, 5m or 1h", n.Value)
		return 0, false
	}
	return d, true
}

var (
	userRE    = regexp.MustCompile(`^[0-9]+(:[0-9]+)?$`)
	runtimeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

func (l *loader) sandbox(f string, n *yaml.Node, s *SandboxSettings) {
	positive := func(f string, n *yaml.Node, dst *int64) {
		if b, ok := l.size(f, n); ok {
			if b <= 0 {
				l.errorf(n, f, "must be greater than zero")
				return
			}
			*dst = b
		}
	}
	l.mapping(n, f, map[string]func(string, *yaml.Node){
		"image": func(f string, v *yaml.Node) {
			if x, ok := l.str(f, v); ok {
				if x == "" || strings.ContainsAny(x, " \t\n") {
					l.errorf(v, f, "must be an image reference like agentbox/base:latest")
					return
				}
				s.Image = x
			}
		},
		"runtime": func(f string, v *yaml.Node) {
			if x, ok := l.str(f, v); ok {
				if x != "" && !runtimeRE.MatchString(x) {
					l.errorf(v, f, "%q is not an OCI runtime name like runsc; use \"\" for the engine default", x)
					return
				}
				s.Runtime = x
			}
		},
		"workspace":  func(f string, v *yaml.Node) { enum(l, f, v, &s.Workspace, sandbox.WorkspaceModes...) },
		"network":    func(f string, v *yaml.Node) { enum(l, f, v, &s.Network, sandbox.NetworkModes...) },
		"background": func(f string, v *yaml.Node) { l.enum(f, v, &s.Background, "kill", "keep") },
		"git_identity": func(f string, v *yaml.Node) {
			if x, ok := l.str(f, v); ok {
				if _, _, err := ParseGitIdentity(x); err != nil {
					l.errorf(v, f, "%v", err)
					return
				}
				s.GitIdentity = x
			}
		},
		"user": func(f string, v *yaml.Node) {
			if x, ok := l.str(f, v); ok {
				if x != "" && !userRE.MatchString(x) {
					l.errorf(v, f, "%q is not uid or uid:gid (numbers); use \"\" for the invoking user", x)
					return
				}
				s.User = x
			}
		},
		"limits": func(f string, v *yaml.Node) {
			l.mapping(v, f, map[string]func(string, *yaml.Node){
				"cpus": func(f string, v *yaml.Node) {
					if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
						l.errorf(v, f, "must be a number of CPUs like 1 or 0.5, not %s", describe(v))
						return
					}
					x, err := strconv.ParseFloat(v.Value, 64)
					if err != nil || !(x > 0) || x > 4096 {
						l.errorf(v, f, "%q must be a number of CPUs greater than zero", v.Value)
						return
					}
					s.CPUs = x
				},
				"memory": func(f string, v *yaml.Node) { positive(f, v, &s.MemoryBytes) },
				"disk": func(f string, v *yaml.Node) {
					positive(f, v, &s.DiskBytes)
					s.DiskSet = true
				},
				"pids": func(f string, v *yaml.Node) {
					if x, ok := l.int(f, v); ok {
						if x <= 0 {
							l.errorf(v, f, "must be greater than zero")
							return
						}
						s.Pids = x
					}
				},
			})
		},
		"timeouts": func(f string, v *yaml.Node) {
			var callMaxNode *yaml.Node
			l.mapping(v, f, map[string]func(string, *yaml.Node){
				"call": func(f string, v *yaml.Node) {
					if d, ok := l.duration(f, v); ok {
						s.CallTimeout = d
					}
				},
				"call_max": func(f string, v *yaml.Node) {
					if d, ok := l.duration(f, v); ok {
						s.CallTimeoutMax = d
						if !l.base[v] { // the default's bound follows a longer call too
							callMaxNode = v
						}
					}
				},
				"session": func(f string, v *yaml.Node) {
					if d, ok := l.duration(f, v); ok {
						s.SessionTimeout = d
					}
				},
			})
			if callMaxNode == nil && s.CallTimeoutMax < s.CallTimeout {
				s.CallTimeoutMax = s.CallTimeout // a longer call: the bound follows it
			}
			if callMaxNode != nil && s.CallTimeoutMax < s.CallTimeout {
				l.errorf(callMaxNode, f+".call_max", "%s is below timeouts.call (%s): call_max bounds the timeout a model may ask for and must be at least the default", s.CallTimeoutMax, s.CallTimeout)
			}
		},
		"output": func(f string, v *yaml.Node) {
			l.mapping(v, f, map[string]func(string, *yaml.Node){
				"max_bytes": func(f string, v *yaml.Node) {
					positive(f, v, &s.OutputMaxBytes)
					if s.OutputMaxBytes > MaxOutputBytes {
						l.errorf(v, f, "must be at most 4MiB: it is what the model reads back (the audit log keeps size and sha256 of all of it)")
					}
				},
			})
		},
		"env": func(f string, v *yaml.Node) {
			s.Env = []string{}
			for i, it := range l.seq(f, v) {
				ef := fmt.Sprintf("%s[%d]", f, i)
				name, ok := l.str(ef, it)
				if !ok {
					continue
				}
				switch {
				case !isName(name):
					l.errorf(it, ef, "%q is not a variable name; list host variables by name, like LANG", name)
				case name == "OPENAI_API_KEY" || name == "AGENTBOX_AUDIT_KEY":
					l.errorf(it, ef, "%s must never reach the sandbox; remove it", name)
				default:
					s.Env = append(s.Env, name)
				}
			}
		},
	})
}
