package main_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/agentbox/agentbox/internal/testutil"
)

// brokerEnv is where a broker effect test runs the real binary: the local
// Docker engine or the test cluster. The tests' upstreams listen on the
// host's loopback, which the host-side proxy dials on both backends (on
// Kubernetes the pod reaches that proxy over the executor's channel), so
// a test asserts the same things on either.
type brokerEnv struct {
	k8s     bool
	env     []string // the binary's environment before the test's own variables
	sandbox string   // appended inside the policy's sandbox: {...} map
}

// dockerBroker runs on the local engine.
func dockerBroker(t *testing.T) brokerEnv {
	t.Helper()
	testutil.RequireDocker(t)
	return brokerEnv{env: baseEnv(t)}
}

// k8sBroker runs on the test cluster (skips without one), with limits
// small enough that the pod fits the 2-core node beside the others.
func k8sBroker(t *testing.T) brokerEnv {
	t.Helper()
	return brokerEnv{k8s: true, env: k8sEnv(t), sandbox: ", limits: {cpus: 0.5, memory: 512MiB}"}
}

// run runs the binary with vars added to the environment. On the cluster
// a session that exits 0 must say it ran there.
func (b brokerEnv) run(t *testing.T, vars []string, args ...string) result {
	t.Helper()
	r := abCmd{fullEnv: append(slices.Clone(b.env), vars...)}.run(t, args...)
	if b.k8s && r.code == 0 && !strings.Contains(r.stderr, "kubernetes backend") {
		t.Fatalf("the session did not run on the kubernetes backend:\n%s", r.stderr)
	}
	return r
}

// applyPending applies the session r left pending (on the cluster the
// pod works on a copy), so that a test looking for the value in the
// workspace looks at what the sandbox wrote.
func (b brokerEnv) applyPending(t *testing.T, r result) {
	t.Helper()
	if m := sessionRe.FindStringSubmatch(r.stderr); m != nil {
		if a := (abCmd{fullEnv: b.env}).run(t, "apply", m[1]); a.code != 0 {
			t.Fatalf("apply %s: %d %s", m[1], a.code, a.stderr)
		}
	}
}

// brokerRecord is what the broker tests read of an audit record.
type brokerRecord struct {
	Event, Decision, Secret, What, Reason string
	Path                                  string `json:"net_path"`
	Status                                int    `json:"net_status"`
	BodySHA256                            string `json:"body_sha256"`
	Argv                                  []string
	line                                  string
}

// brokerAudit reads the audit log at path and returns its records; the
// test fails when the log is missing or holds value in any spelling
// holdsValue knows.
func brokerAudit(t *testing.T, path, value string) []brokerRecord {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil || len(raw) == 0 {
		t.Fatalf("audit log %s: %v (%d bytes)", path, err, len(raw))
	}
	if holdsValue(raw, value) {
		t.Fatalf("the audit log holds the secret's value")
	}
	var out []brokerRecord
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec brokerRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit record %q: %v", line, err)
		}
		rec.line = line
		out = append(out, rec)
	}
	return out
}

// receipts are the log's net records of requests the secret went into.
func receipts(recs []brokerRecord, secret string) []brokerRecord {
	var out []brokerRecord
	for _, r := range recs {
		if r.Event == "net" && r.Secret == secret && r.Decision == "allow" {
			out = append(out, r)
		}
	}
	return out
}

// misuseAlarms are the log's secret_misuse alarms.
func misuseAlarms(recs []brokerRecord) []brokerRecord {
	var out []brokerRecord
	for _, r := range recs {
		if r.Event == "alarm" && r.What == "secret_misuse" {
			out = append(out, r)
		}
	}
	return out
}
