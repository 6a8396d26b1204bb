package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// Required attributes of the OCSF 1.3.0 schema (ocsf/ocsf-schema at tag
// 1.3.0): the base event (with includes/classification.json and
// includes/occurrence.json), the System Activity category (system.json),
// each class, and the objects those name.
var ocsfRequired = struct {
	base    []string
	system  []string
	class   map[int][]string
	objects map[string][]string
}{
	base:   []string{"activity_id", "category_uid", "class_uid", "type_uid", "time", "metadata", "severity_id"},
	system: []string{"actor", "device"},
	class: map[int][]string{
		OCSFProcessActivity: {"process"},       // events/system/process.json
		OCSFFileActivity:    {"actor", "file"}, // events/system/filesystem.json
		OCSFNetworkActivity: {"dst_endpoint"},  // events/network/network.json
	},
	objects: map[string][]string{
		"metadata":         {"product", "version"}, // objects/metadata.json
		"metadata.product": {"vendor_name"},        // objects/product.json
		"device":           {"type_id"},            // objects/device.json
		"file":             {"name", "type_id"},    // objects/file.json
	},
}

func checkOCSF(t *testing.T, ev map[string]any) {
	t.Helper()
	class := int(ev["class_uid"].(float64))
	need := append([]string{}, ocsfRequired.base...)
	if class/1000 == 1 {
		need = append(need, ocsfRequired.system...)
	}
	need = append(need, ocsfRequired.class[class]...)
	for _, k := range need {
		if _, ok := ev[k]; !ok {
			t.Errorf("class %d: required %q missing: %v", class, k, ev)
		}
	}
	for obj, keys := range ocsfRequired.objects {
		var v any = ev
		for _, part := range strings.Split(obj, ".") {
			m, _ := v.(map[string]any)
			v = m[part]
		}
		m, ok := v.(map[string]any)
		if !ok {
			continue // not in this class
		}
		for _, k := range keys {
			if _, ok := m[k]; !ok {
				t.Errorf("class %d: %s.%s missing", class, obj, k)
			}
		}
	}
	num := func(k string) int { return int(ev[k].(float64)) }
	if num("type_uid") != class*100+num("activity_id") || num("category_uid") != class/1000 {
		t.Errorf("type_uid/category_uid inconsistent: %v", ev)
	}
	md := ev["metadata"].(map[string]any)
	if md["product"].(map[string]any)["name"] != "agentbox" || md["version"] != OCSFVersion {
		t.Errorf("metadata: %v", md)
	}
}

func TestExportOCSF(t *testing.T) {
	recs := sampleSession("sess-ocsf-1", 0, true)
	recs = append(recs[:len(recs)-1],
		&Record{Time: at(5.1), Session: "sess-ocsf-1", Event: EventToolCall, CallID: "call_4", Tool: "read_file", Phase: PhaseDecision,
			Args: map[string]any{"path": "/workspace/.env"}, Decision: "deny", Rule: "files.read.deny[0]", DecidedBy: DecidedByPolicy},
		&Record{Time: at(5.2), Session: "sess-ocsf-1", Event: EventToolCall, CallID: "call_5", Tool: "write_file", Phase: PhaseDecision,
			Args: map[string]any{"path": "/workspace/main.go", "content": "package main"}, Decision: "allow", Rule: "files.write.allow[0]"},
		&Record{Time: at(5.3), Session: "sess-ocsf-1", Event: EventToolCall, CallID: "call_5", Tool: "write_file", Phase: PhaseResult, DurationMS: Ptr[int64](1)},
		&Record{Time: at(5.4), Session: "sess-ocsf-1", Event: EventNet, NetHost: "pypi.org", NetPort: 443, NetAddr: "151.101.0.223:443",
			Decision: "allow", Rule: "network.allow[0]", BytesUp: Ptr[int64](800), BytesDown: Ptr[int64](91000), DurationMS: Ptr[int64](120)},
		&Record{Time: at(5.5), Session: "sess-ocsf-1", Event: EventNet, NetHost: "evil.example", NetPort: 80, Decision: "deny", Rule: "network.default"},
		&Record{Time: at(5.6), Session: "sess-ocsf-1", Event: EventAlarm, Reason: "a hard link into a denied path was removed"},
		&Record{Time: at(5.7), Session: "sess-ocsf-1", Event: EventError, Error: "boom"},
		recs[len(recs)-1])
	path := writeLog(t, Options{}, recs...)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	st, err := ExportOCSF(&out, f)
	if err != nil {
		t.Fatal(err)
	}
	lines := readLines(t, path)
	classes := map[int]int{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %d is not JSON: %v", n, err)
		}
		checkOCSF(t, ev)
		classes[int(ev["class_uid"].(float64))]++
		// Traceable: the source line's hash and seq.
		u := ev["unmapped"].(map[string]any)["agentbox"].(map[string]any)
		line := int(u["line"].(float64))
		if u["sha256"] != sha(lines[line-1]) || int64(u["seq"].(float64)) != int64(line) || u["session"] != "sess-ocsf-1" {
			t.Errorf("event %d does not trace back to line %d: %v", n, line, u)
		}
		if ev["actor"].(map[string]any)["user"].(map[string]any)["name"] != "u" {
			t.Errorf("actor: %v", ev["actor"])
		}
		if u["tool"] == "read_file" && (ev["disposition_id"].(float64) != 2 || ev["policy"].(map[string]any)["name"] != "files.read.deny[0]") {
			t.Errorf("denied read: %v", ev)
		}
	}
	want := map[int]int{OCSFProcessActivity: 5, OCSFFileActivity: 3, OCSFNetworkActivity: 2}
	if len(classes) != 3 || classes[1007] != want[1007] || classes[1001] != want[1001] || classes[4001] != want[4001] {
		t.Fatalf("classes %v, want %v", classes, want)
	}
	if st.Events != n || st.Skipped != len(lines)-n {
		t.Fatalf("%+v, %d events, %d lines", st, n, len(lines))
	}
}
