package audit

import (
	"encoding/base64"
	"encoding/hex"
	"regexp"
	"strings"
)

// detector is one built-in secret format: every match of re is replaced by
// repl (a regexp template; "[REDACTED]" alone when empty).
type detector struct {
	name string
	re   *regexp.Regexp
	repl string
	// hints: the regexp runs only on text holding one of them (in the
	// lower-cased text when fold); most text holds none, and a literal
	// search is far cheaper than the regexp.
	hints []string
	fold  bool
}

// detectors are the built-in secret formats, applied whatever the policy's
// audit.redact says. The formats follow well-kept detector sets (gitleaks'
// rules): vendor prefixes with their documented lengths, and a few generic
// shapes (bearer tokens, JWTs, passwords in URLs, key-like JSON members,
// private-key blocks). Where a prefix tells what the value is, it is kept.
var detectors = []detector{
	{"private-key", regexp.MustCompile(`(?s)-----BEGIN[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)`), "-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----", []string{"PRIVATE KEY"}, false},
	{"aws-access-key-id", regexp.MustCompile(`\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`), "", []string{"A3T", "AKIA", "ASIA", "ABIA", "ACCA"}, false},
	{"aws-secret-access-key", regexp.MustCompile(`(?i)(aws.{0,20}?secret.{0,20}?['"]?\s*[:=]\s*['"]?)[A-Za-z0-9/+=]{40}\b`), "${1}[REDACTED]", []string{"aws"}, true},
	{"github-token", regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36,}\b`), "", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, false},
	{"github-fine-grained-pat", regexp.MustCompile(`\bgithub_pat_\w{82,}`), "", []string{"github_pat_"}, false},
	{"gitlab-token", regexp.MustCompile(`\bgl(?:pat|dt|ptt|rt)-[\w-]{20,}`), "", []string{"glpat-", "gldt-", "glptt-", "glrt-"}, false},
	{"anthropic-or-openai-key", regexp.MustCompile(`\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), "", []string{"sk-"}, false},
	{"stripe-key", regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test|prod)_[0-9A-Za-z]{10,}`), "", []string{"_live_", "_test_", "_prod_"}, false},
	{"slack-token", regexp.MustCompile(`\bxox[abposr]-[0-9A-Za-z-]{10,}`), "", []string{"xox"}, false},
	{"slack-webhook", regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}`), "", []string{"hooks.slack.com"}, false},
	{"google-api-key", regexp.MustCompile(`\bAIza[\w-]{35}\b`), "", []string{"AIza"}, false},
	{"npm-token", regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`), "", []string{"npm_"}, false},
	{"huggingface-token", regexp.MustCompile(`\bhf_[A-Za-z]{34,}\b`), "", []string{"hf_"}, false},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), "", []string{"eyJ"}, false},
	{"bearer", regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{12,}`), "${1}[REDACTED]", []string{"bearer"}, true},
	{"basic-auth", regexp.MustCompile(`(?i)\b(authorization:\s*basic\s+)[A-Za-z0-9+/=]{8,}`), "${1}[REDACTED]", []string{"basic"}, true},
	{"url-password", regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@'"]{1,256}:)[^\s/@'"]{1,256}@`), "${1}[REDACTED]@", []string{"://"}, false},
	{"json-secret-member", regexp.MustCompile(`(?i)("[\w.-]{0,30}(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|credential|private[_-]?key)[\w.-]{0,30}"\s*:\s*")(?:[^"\\]|\\.){4,}"`), `${1}[REDACTED]"`, []string{"key", "secret", "token", "passw", "credential"}, true},
	{"assignment-secret", regexp.MustCompile(`(?i)\b((?:[A-Z0-9_]*_)?(?:API_?KEY|SECRET(?:_KEY)?|ACCESS_TOKEN|AUTH_TOKEN|PASSWORD|PASSWD)\s*=\s*['"]?)[^\s'"]{8,}`), "${1}[REDACTED]", []string{"key", "secret", "token", "passw"}, true},
}

// applyDetectors replaces every built-in secret format in s.
func applyDetectors(s string) string {
	lower := ""
	for _, d := range detectors {
		text := s
		if d.fold {
			if lower == "" {
				lower = strings.ToLower(s)
			}
			text = lower
		}
		hit := false
		for _, h := range d.hints {
			if strings.Contains(text, h) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		before := s
		if d.repl == "" {
			s = d.re.ReplaceAllLiteralString(s, Redacted)
		} else {
			s = d.re.ReplaceAllString(s, d.repl)
		}
		if s != before {
			lower = ""
		}
	}
	return s
}

// minEncodedLen is the shortest encoded form of a known secret that is
// redacted; shorter runs would hit ordinary text.
const minEncodedLen = 8

// encodedForms returns the forms a known secret may take in output besides
// itself: hex (lower and upper case) and base64 (standard and URL
// alphabets) at each of the three byte alignments, so that the secret is
// found inside a longer encoded text too. For an alignment only the
// characters that encode whole groups of the secret's bytes are kept.
func encodedForms(secret string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minEncodedLen {
			out = append(out, s)
		}
	}
	h := hex.EncodeToString([]byte(secret))
	add(h)
	add(strings.ToUpper(h))
	for off := 0; off < 3 && off < len(secret); off++ {
		part := secret[off:]
		part = part[:len(part)/3*3]
		add(base64.RawStdEncoding.EncodeToString([]byte(part)))
		add(base64.RawURLEncoding.EncodeToString([]byte(part)))
	}
	return out
}
