package policy

import (
	"bytes"
	"context"
	"fmt"
	"net/textproto"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"
)

// Secret is one entry of the policy's secrets: a value that stays on the
// host and that the proxy puts into requests to Hosts in place of the
// placeholder the sandbox holds in the variable Name.
type Secret struct {
	Name   string    // the sandbox variable holding the placeholder
	From   string    // env:NAME | file:PATH | command:ARGV, as written
	Hosts  []NetRule // the only destinations the value is sent to (a portless entry means 443)
	During []*rule   // when non-empty: only into connections of a program matching one of them
	// Headers are the only request headers the value is put into
	// (canonical names; default Authorization, Basic credentials included).
	Headers []string
	// AllowPlaintext lets the value go out over plain HTTP; by default it
	// is substituted only inside TLS.
	AllowPlaintext bool
	kind           string   // env | file | command
	arg            string   // the variable, the path
	argv           []string // the command
}

// DuringText is secrets.NAME.during as written.
func (s *Secret) DuringText() []string {
	out := make([]string, len(s.During))
	for i, r := range s.During {
		out[i] = r.match
	}
	return out
}

// MatchesHost reports whether t is one of the secret's hosts.
func (s *Secret) MatchesHost(t NetTarget) bool {
	for _, h := range s.Hosts {
		if h.MatchesTarget(t) {
			return true
		}
	}
	return false
}

// Secrets returns the policy's secrets, sorted by name.
func (p *Policy) Secrets() []*Secret { return append([]*Secret(nil), p.secrets...) }

// SecretDuring reports whether a call running script may use secret s:
// always when s has no during rules, else when a simple command of the
// script (after unwrapping) certainly matches one of them.
func (p *Policy) SecretDuring(s *Secret, script string) bool {
	if len(s.During) == 0 {
		return true
	}
	if script == "" {
		return false
	}
	for _, cl := range p.analyse(script).lines {
		if cl == nil {
			continue
		}
		for _, r := range s.During {
			if r.matches(cl, false) {
				return true
			}
		}
	}
	return false
}

// resolveTimeout bounds a command: source.
const resolveTimeout = 30 * time.Second

// Resolve reads the secret's value on the host. It is called once per
// session; the value must be one line (it goes into HTTP headers).
func (s *Secret) Resolve(ctx context.Context) (string, error) {
	var v string
	switch s.kind {
	case "env":
		v = os.Getenv(s.arg)
		if v == "" {
			return "", fmt.Errorf("secret %s: the host variable %s is empty or unset; export it before starting", s.Name, s.arg)
		}
	case "file":
		b, err := os.ReadFile(s.arg)
		if err != nil {
			return "", fmt.Errorf("secret %s: %v; make the file readable or change secrets.%s.from", s.Name, err, s.Name)
		}
		v = strings.TrimRight(string(b), "\r\n")
	case "command":
		ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, s.argv[0], s.argv[1:]...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			if len(msg) > 200 {
				msg = msg[:200]
			}
			return "", fmt.Errorf("secret %s: %s failed: %v %s; fix the command or change secrets.%s.from", s.Name, s.argv[0], err, msg, s.Name)
		}
		v = strings.TrimRight(string(out), "\r\n")
	default:
		return "", fmt.Errorf("secret %s: unknown source %q", s.Name, s.From)
	}
	switch {
	case v == "":
		return "", fmt.Errorf("secret %s: %s gave an empty value", s.Name, s.From)
	case len(v) < MinSecretLen:
		return "", fmt.Errorf("secret %s: the value is shorter than %d bytes; too short to find and scrub reliably", s.Name, MinSecretLen)
	case strings.ContainsAny(v, "\r\n\x00"):
		return "", fmt.Errorf("secret %s: the value spans lines or holds NUL; it must be one header-safe line", s.Name)
	}
	return v, nil
}

// MinSecretLen is the shortest secret value accepted.
const MinSecretLen = 8

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// secrets loads the secrets: block (a mapping of variable names).
func (l *loader) secrets(f string, n *yaml.Node, p *Policy) {
	if l.alias(n, f) || isNull(n) {
		return
	}
	if n.Kind != yaml.MappingNode {
		l.errorf(n, f, "must be a mapping of variable names, like GITHUB_TOKEN: {from: env:GITHUB_TOKEN, hosts: [github.com]}")
		return
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		sf := f + "." + k.Value
		if k.Kind != yaml.ScalarNode || !envName.MatchString(k.Value) {
			l.errorf(k, sf, "a secret's name is the sandbox variable that holds its placeholder: letters, digits and _, not starting with a digit")
			continue
		}
		if seen[k.Value] {
			l.errorf(k, sf, "duplicate secret; keep one")
			continue
		}
		seen[k.Value] = true
		s := &Secret{Name: k.Value}
		sawFrom, sawHosts := false, false
		l.mapping(v, sf, map[string]func(string, *yaml.Node){
			"from": func(f string, v *yaml.Node) {
				sawFrom = true
				if str, ok := l.str(f, v); ok {
					if err := s.parseFrom(str, l.host); err != nil {
						l.errorf(v, f, "%v", err)
					}
				}
			},
			"hosts": func(f string, v *yaml.Node) {
				sawHosts = true
				s.Hosts = l.netRules(f, v)
				for i := range s.Hosts {
					if s.Hosts[i].Port == 0 {
						s.Hosts[i].Port = 443 // a credential goes to the TLS port unless a port is named
					}
				}
				if len(s.Hosts) > 0 {
					l.netChecks = append(l.netChecks, netCheck{field: f, node: v, hosts: s.Hosts, secret: true})
				}
			},
			"during":  func(f string, v *yaml.Node) { s.During = l.rules(f, v, Allow) },
			"headers": func(f string, v *yaml.Node) { s.Headers = l.secretHeaders(f, v) },
			"allow_plaintext": func(f string, v *yaml.Node) {
				if b, ok := l.boolean(f, v); ok {
					s.AllowPlaintext = b
				}
			},
		})
		if len(s.Headers) == 0 {
			s.Headers = []string{"Authorization"}
		}
		if v.Kind != yaml.MappingNode {
			continue
		}
		if !sawFrom {
			l.errorf(v, sf+".from", "missing; write where the value comes from on the host: env:NAME, file:PATH or command:ARGV")
		}
		if !sawHosts || len(s.Hosts) == 0 {
			l.errorf(v, sf+".hosts", "missing or empty; name the only hosts the value may be sent to, like [api.github.com]")
		}
		if s.kind != "" && len(s.Hosts) > 0 {
			p.secrets = append(p.secrets, s)
		}
	}
	sort.Slice(p.secrets, func(i, j int) bool { return p.secrets[i].Name < p.secrets[j].Name })
	if len(p.secrets) > 0 || len(n.Content) > 0 {
		l.netChecks = append(l.netChecks, netCheck{field: f, node: n})
	}
}

// noSecretHeaders are headers a value may not be put into: they frame
// the request or route it, or the proxy drops them.
var noSecretHeaders = map[string]bool{
	"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Proxy-Connection": true, "Keep-Alive": true, "Proxy-Authorization": true, "Te": true,
	"Trailer": true, "Upgrade": true, "Expect": true, "Content-Encoding": true,
}

// secretHeaders loads secrets.NAME.headers: header names, canonicalised.
func (l *loader) secretHeaders(f string, n *yaml.Node) []string {
	var out []string
	for i, it := range l.seq(f, n) {
		hf := fmt.Sprintf("%s[%d]", f, i)
		h, ok := l.str(hf, it)
		if !ok {
			continue
		}
		if h == "" || strings.IndexFunc(h, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			l.errorf(it, hf, "%q is not a header name; write one like Authorization or X-Api-Key", h)
			continue
		}
		h = textproto.CanonicalMIMEHeaderKey(h)
		if noSecretHeaders[h] {
			l.errorf(it, hf, "%s frames or routes the request; a secret cannot be put into it (name the header that carries the credential, like Authorization)", h)
			continue
		}
		out = append(out, h)
	}
	return out
}

func isTokenChar(r rune) bool {
	return r < 0x7f && r > 0x20 && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
}

// parseFrom checks a source: the variable name, a readable file, or a
// command found on the host's PATH (with host: on the host only).
func (s *Secret) parseFrom(from string, host bool) error {
	s.From = from
	kind, arg, ok := strings.Cut(from, ":")
	if !ok || arg == "" {
		return fmt.Errorf("%q: write env:NAME, file:PATH or command:ARGV", from)
	}
	switch kind {
	case "env":
		if !envName.MatchString(arg) {
			return fmt.Errorf("%q: %q is not a variable name", from, arg)
		}
	case "file":
		// Non-blocking: a FIFO named here must not stall loading the
		// policy (before the trust question is even asked); nothing is read.
		if f, err := os.OpenFile(arg, os.O_RDONLY|syscall.O_NONBLOCK, 0); host && err != nil {
			return fmt.Errorf("%q: cannot read the file: %v", from, err)
		} else if err == nil {
			f.Close()
		}
	case "command":
		argv, err := parseRuleWords(arg)
		if err != nil {
			return fmt.Errorf("%q: %v", from, err)
		}
		if _, err := exec.LookPath(argv[0]); host && err != nil {
			return fmt.Errorf("%q: %v", from, err)
		}
		s.argv = argv
	default:
		return fmt.Errorf("%q: unknown source %q; write env:NAME, file:PATH or command:ARGV", from, kind)
	}
	s.kind, s.arg = kind, arg
	return nil
}

// Peek reads an env: or file: secret's value without checks, for
// redaction on the host ("" for a command: source, which runs once, at
// Resolve, or when unreadable).
func (s *Secret) Peek() string {
	switch s.kind {
	case "env":
		return os.Getenv(s.arg)
	case "file":
		if b, err := os.ReadFile(s.arg); err == nil {
			return strings.TrimRight(string(b), "\r\n")
		}
	}
	return ""
}
