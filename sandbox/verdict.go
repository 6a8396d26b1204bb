package sandbox

import "fmt"

// Verdict is a decision of the policy's rules: allow, ask or deny
// (policy.Verdict is this type). It lives here so that the executor's
// exec-time judge and the up-front check speak one type without the
// executor importing the policy package.
type Verdict int

// The verdicts, least restrictive first.
const (
	VerdictAllow Verdict = iota
	VerdictAsk
	VerdictDeny
)

func (v Verdict) String() string {
	switch v {
	case VerdictAllow:
		return "allow"
	case VerdictAsk:
		return "ask"
	case VerdictDeny:
		return "deny"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// MarshalText encodes the verdict as "allow", "ask" or "deny".
func (v Verdict) MarshalText() ([]byte, error) {
	if v < VerdictAllow || v > VerdictDeny {
		return nil, fmt.Errorf("policy: invalid verdict %d", int(v))
	}
	return []byte(v.String()), nil
}

// UnmarshalText accepts "allow", "ask" or "deny".
func (v *Verdict) UnmarshalText(b []byte) error {
	switch string(b) {
	case "allow":
		*v = VerdictAllow
	case "ask":
		*v = VerdictAsk
	case "deny":
		*v = VerdictDeny
	default:
		return fmt.Errorf("policy: %q is not a verdict; use allow, ask or deny", b)
	}
	return nil
}
