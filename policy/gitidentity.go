package policy

import (
	"fmt"
	"regexp"
	"strings"
)

// The sandbox.git_identity settings other than a fixed "Name <email>".
const (
	GitIdentityHost = "host" // the workspace's user.name/user.email as host git resolves them
	GitIdentityNone = "none" // no identity: git in the sandbox has none
)

// gitIdentityRE is a fixed identity: a name (no angle brackets or control
// characters) and an address (no spaces, one @) in angle brackets.
var gitIdentityRE = regexp.MustCompile(`^([^<>\x00-\x1f\x7f]*[^<>\s\x00-\x1f\x7f]) +<([^<>\s@\x00-\x1f\x7f]+@[^<>\s@\x00-\x1f\x7f]+)>$`)

// ParseGitIdentity validates a sandbox.git_identity value. For a fixed
// identity it returns the name and the email; for "host" and "none" both
// are "".
func ParseGitIdentity(s string) (name, email string, err error) {
	if s == GitIdentityHost || s == GitIdentityNone {
		return "", "", nil
	}
	m := gitIdentityRE.FindStringSubmatch(s)
	if m == nil || strings.TrimSpace(m[1]) == "" || len(s) > 512 {
		return "", "", fmt.Errorf("%q is not host, none, or an identity like \"Ada Lovelace <ada@example.com>\" (a name, then an email address in angle brackets)", s)
	}
	return strings.TrimSpace(m[1]), m[2], nil
}
