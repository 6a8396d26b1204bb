package audit

import (
	"regexp"
	"strings"
)

// detectors are the built-in secret formats, applied whatever the policy's
// audit.redact says. They follow gitleaks' default rules: vendor prefixes
// with their documented lengths and alphabets (AWS, GCP, Azure, GitHub,
// GitLab, Slack, Stripe, OpenAI/Anthropic, npm, Hugging Face), JWTs,
// private-key blocks, passwords in URLs, and secrets behind a label:
// password=/passwd/db_pass/secret/api_key assignments (shell, YAML, INI,
// JSON), `-p<password>` of MySQL-like clients, --password, sshpass -p and
// netrc `password`. Where a prefix tells what the value is, the label is
// kept and only the value is fingerprinted.
var detectors = []detector{
	{name: "private-key", re: regexp.MustCompile(`(?s)-----BEGIN[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 _-]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)`), hints: []string{"PRIVATE KEY"}},
	{name: "aws-access-key-id", re: regexp.MustCompile(`\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b`), hints: []string{"A3T", "AKIA", "ASIA", "ABIA", "ACCA"}},
	{name: "aws-secret-access-key", re: regexp.MustCompile(`(?i)(aws.{0,20}?secret.{0,20}?['"]?\s*[:=]\s*['"]?)[A-Za-z0-9/+=]{40}\b`), keep: true, hints: []string{"aws"}, fold: true},
	{name: "github-token", re: regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36,}\b`), hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}},
	{name: "github-fine-grained-pat", re: regexp.MustCompile(`\bgithub_pat_\w{82,}`), hints: []string{"github_pat_"}},
	{name: "gitlab-token", re: regexp.MustCompile(`\bgl(?:pat|dt|ptt|rt|cbt|imt|soat|ft|oas)-[\w-]{20,}`), hints: []string{"gl"}},
	{name: "openai-or-anthropic-key", re: regexp.MustCompile(`\bsk-(?:ant-(?:api|admin)\d\d-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}`), hints: []string{"sk-"}},
	{name: "stripe-key", re: regexp.MustCompile(`\b(?:sk|rk|pk)_(?:live|test|prod)_[0-9A-Za-z]{10,}`), hints: []string{"_live_", "_test_", "_prod_"}},
	{name: "stripe-webhook-secret", re: regexp.MustCompile(`\bwhsec_[0-9A-Za-z]{24,}`), hints: []string{"whsec_"}},
	{name: "slack-token", re: regexp.MustCompile(`\bxox[abposre]-[0-9A-Za-z-]{10,}|\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{20,}`), hints: []string{"xox", "xapp-"}},
	{name: "slack-webhook", re: regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/_-]{20,}`), hints: []string{"hooks.slack.com"}},
	{name: "gcp-api-key", re: regexp.MustCompile(`\bAIza[\w-]{35}`), hints: []string{"AIza"}},
	{name: "gcp-oauth-client-secret", re: regexp.MustCompile(`\bGOCSPX-[\w-]{28}\b`), hints: []string{"GOCSPX-"}},
	{name: "gcp-oauth-token", re: regexp.MustCompile(`\bya29\.[\w-]{30,}`), hints: []string{"ya29."}},
	{name: "azure-storage-key", re: regexp.MustCompile(`(?i)((?:AccountKey|SharedAccessKey)\s*=\s*)[A-Za-z0-9+/]{40,}={0,2}`), keep: true, hints: []string{"accountkey", "sharedaccesskey"}, fold: true},
	{name: "azure-sas-signature", re: regexp.MustCompile(`([?&]sig=)[A-Za-z0-9%+/]{40,}={0,2}`), keep: true, hints: []string{"sig="}},
	{name: "azure-ad-client-secret", re: regexp.MustCompile(`(^|[^\w~.-])([\w~.]{3}\dQ~[\w~.-]{31,34})(?:$|[^\w~.-])`), keep: true, hints: []string{"Q~"}},
	{name: "npm-token", re: regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`), hints: []string{"npm_"}},
	{name: "huggingface-token", re: regexp.MustCompile(`\bhf_[A-Za-z]{34,}\b`), hints: []string{"hf_"}},
	{name: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`), hints: []string{"eyJ"}},
	{name: "bearer", re: regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{12,}`), keep: true, hints: []string{"bearer"}, fold: true},
	{name: "basic-auth", re: regexp.MustCompile(`(?i)\b(authorization:\s*basic\s+)[A-Za-z0-9+/=]{8,}`), keep: true, hints: []string{"basic"}, fold: true},
	{name: "url-password", re: regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@'"]{1,256}:)([^\s/@'"]{1,256})@`), keep: true, hints: []string{"://"}},
	{name: "json-secret", re: regexp.MustCompile(`(?i)("[\w.-]{0,30}(?:api[_-]?key|apikey|secret|token|passw(?:or)?d|pass|pwd|credential|private[_-]?key)[\w.-]{0,30}"\s*:\s*")((?:[^"\\]|\\.){4,})"`), keep: true, hints: []string{"key", "secret", "token", "pass", "pwd", "credential"}, fold: true, ok: jsonSecretOK},
	{name: "client-password", re: regexp.MustCompile(`(?i)\b((?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump|mariadb-admin)\b[^\n;&|]*?\s-p)([^\s'";&|]{3,})`), keep: true, hints: []string{"mysql", "mariadb"}, fold: true},
	{name: "cli-password", re: regexp.MustCompile(`(?i)((?:\s|^)(?:--password|--passwd|--db-password|--pass)(?:=|\s+)['"]?)([^\s'"-][^\s'"]{2,})|(\bsshpass\s+-p\s*['"]?)([^\s'"]{3,})`), keep: true, hints: []string{"--pass", "--db-pass", "sshpass"}, fold: true, ok: labelValueOK},
	{name: "netrc-password", re: regexp.MustCompile(`(?i)(\b(?:machine\s+\S+(?:\s+(?:login|account)\s+\S+)+|machine\s+[\w-]+\.[\w.:-]+|default(?:\s+(?:login|account)\s+\S+)*)\s+password\s+)(\S+)`), keep: true, hints: []string{"password"}, fold: true},
	{name: "password-assignment", re: regexp.MustCompile(`(?i)(\b(?:[a-z0-9]+[_.-])*(?:password|passwd|pass|pwd|passphrase|secret|secret[_-]?key|api[_-]?key|apikey|access[_-]?key|auth[_-]?token|access[_-]?token|private[_-]?key|client[_-]?secret|db[_-]?pass)['"]?\]?\s*(?:=>|:=|=|:)\s*['"]?)([^\s'"]{4,})`), keep: true, hints: []string{"pass", "pwd", "secret", "key", "token"}, fold: true, ok: labelValueOK},
}

// labelValueOK rejects what follows a password label but is no secret: a
// variable or template reference, a call, a placeholder, a mask, a
// keyword.
func labelValueOK(v string) bool {
	v = strings.TrimRight(v, `,;'")]}`)
	switch strings.ToLower(v) {
	case "", "none", "null", "nil", "true", "false", "undefined", "required", "optional", "string", "str", "env", "changeme", "password", "secret", "<password>", "xxx", "xxxx", "redacted", "[redacted]":
		return false
	}
	if len(v) < 4 || strings.HasPrefix(v, "[REDACTED") || strings.Trim(v, "*x•.") == "" {
		return false
	}
	switch v[0] {
	case '$', '{', '(', '<', '%', '[', '@', '&', '`':
		return false
	}
	if attrRef.MatchString(v) {
		return false // settings.API_KEY, config.db.password
	}
	return !strings.ContainsAny(v, "()") && !strings.HasPrefix(v, "os.") && !strings.HasPrefix(v, "process.env") && !strings.HasPrefix(v, "self.")
}

// attrRef is a dotted reference to a variable (settings.API_KEY).
var attrRef = regexp.MustCompile(`^[A-Za-z_]{2,}(?:\.[A-Za-z_][A-Za-z0-9_]+)+$`)

func jsonSecretOK(v string) bool {
	return labelValueOK(v) && !strings.HasPrefix(v, "${")
}
