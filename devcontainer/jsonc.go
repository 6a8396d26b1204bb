// Package devcontainer reads a project's devcontainer.json into sandbox
// settings agentbox can honour (image or Dockerfile build, environment,
// user, lifecycle commands) and refuses, naming the field, everything that
// would loosen the hardening or reach the host (features, runArgs, mounts,
// ports, compose, initializeCommand, ...). Nothing in it loosens the policy.
package devcontainer

import (
	"errors"
	"fmt"
)

// StripJSONC turns JSON with comments (// and /* */) and trailing commas
// into plain JSON, leaving string contents untouched.
func StripJSONC(in []byte) ([]byte, error) {
	out := make([]byte, 0, len(in))
	for i := 0; i < len(in); i++ {
		c := in[i]
		switch {
		case c == '"':
			j := i + 1
			for ; j < len(in) && in[j] != '"'; j++ {
				if in[j] == '\\' {
					j++
				}
			}
			if j >= len(in) {
				return nil, errors.New("unterminated string")
			}
			out = append(out, in[i:j+1]...)
			i = j
		case c == '/' && i+1 < len(in) && in[i+1] == '/':
			for i < len(in) && in[i] != '\n' {
				i++
			}
			if i < len(in) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(in) && in[i+1] == '*':
			j := i + 2
			for ; j+1 < len(in) && !(in[j] == '*' && in[j+1] == '/'); j++ {
			}
			if j+1 >= len(in) {
				return nil, fmt.Errorf("unterminated /* comment at byte %d", i)
			}
			out = append(out, ' ')
			i = j + 1
		case c == ']' || c == '}':
			// Drop a trailing comma: the last non-space byte written.
			k := len(out) - 1
			for k >= 0 && isSpace(out[k]) {
				k--
			}
			if k >= 0 && out[k] == ',' {
				out = append(out[:k], out[k+1:]...)
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out, nil
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
