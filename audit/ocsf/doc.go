// Package ocsf exports an agentbox audit log as OCSF 1.3 events, one JSON
// object per line, for SIEMs. Every record type is exported (see the
// mapping table in README.md); a tool call is one event carrying its
// decision and its outcome, a changed file (a changes record's, or
// session_end's) one File System Activity with its hash. Each event names the profiles whose attributes
// it uses in metadata.profiles, uses only attributes the schema defines,
// and carries its source record's hash (sha256 of the log line, what the
// next line's prev holds; "/N" for a record's N-th file) as metadata.uid, so it can be traced back and
// verified. The test validates every event against the schema's own
// definitions (audit/testdata/ocsf-schema).
package ocsf
